package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// devPGDir is where `make run` keeps its PostgreSQL cluster: dataDir/pg, unless the process
// runs as root and the postgres user, which the server runs as, cannot reach that directory
// (a checkout under /root, or in a mktemp -d folder: mode 0700). Then the cluster lives under
// /var/tmp in a directory named for the checkout, the same on every run, and moved says so.
func devPGDir(dataDir string) (dir string, moved bool, err error) {
	abs, err := filepath.Abs(filepath.Join(dataDir, "pg"))
	if err != nil {
		return "", false, err
	}
	if os.Geteuid() != 0 {
		return abs, false, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return abs, false, nil // pgcluster explains that root needs a postgres user
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if traversable(filepath.Dir(abs), uint32(uid), uint32(gid)) {
		return abs, false, nil
	}
	sum := sha256.Sum256([]byte(abs))
	parent := "/var/tmp" // kept across reboots, unlike /tmp on many systems
	if _, err := os.Stat(parent); err != nil {
		parent = os.TempDir()
	}
	home := filepath.Join(parent, "modelgateway-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(home, 0o755); err != nil {
		return "", false, fmt.Errorf("a data directory the postgres user can reach: %w", err)
	}
	if err := os.Chmod(home, 0o755); err != nil {
		return "", false, err
	}
	return filepath.Join(home, "pg"), true, nil
}

// traversable reports whether a process with uid and gid can search every directory from the
// root down to dir.
func traversable(dir string, uid, gid uint32) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return true
		}
		mode := fi.Mode().Perm()
		var x bool
		switch {
		case st.Uid == uid:
			x = mode&0o100 != 0
		case st.Gid == gid:
			x = mode&0o010 != 0
		default:
			x = mode&0o001 != 0
		}
		if !x {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}
