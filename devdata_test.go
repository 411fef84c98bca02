package main

import (
	"os"
	"path/filepath"
	"testing"
)

// make run as root in a mode-0700 checkout: the postgres user cannot reach the data directory,
// which traversable detects so that the cluster goes where it can.
func TestTraversableFollowsEveryAncestor(t *testing.T) {
	t.Parallel()
	// Not t.TempDir(): its parent directory is mode 0700.
	top, err := os.MkdirTemp("", "traverse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	inner := filepath.Join(top, "checkout", ".data")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	const other = 54321 // neither the owner nor in the group
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	if !traversable(inner, other, other) {
		t.Fatal("a path of 0755 directories is not traversable")
	}
	if err := os.Chmod(filepath.Join(top, "checkout"), 0o700); err != nil {
		t.Fatal(err)
	}
	if traversable(inner, other, other) {
		t.Fatal("a 0700 ancestor owned by someone else was taken as traversable")
	}
	if uid, gid := uint32(os.Getuid()), uint32(os.Getgid()); !traversable(inner, uid, gid) {
		t.Fatal("the owner cannot traverse its own 0700 directory")
	}
}
