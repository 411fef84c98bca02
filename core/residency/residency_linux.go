package residency

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// drop advises MADV_DONTNEED on every mapping of /proc/self/exe that is neither writable nor
// holds a page of its own (smaps' Anonymous): such a mapping is private and clean, so a
// dropped page comes back from the file with the same bytes. A writable mapping (.data,
// .noptrdata) or one the dynamic loader wrote (a relocation's copy-on-write page) would lose
// what was written: those are left alone.
func drop() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("residency: %w", err)
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, nil
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("residency: %w", err)
	}
	var dropped int64
	for _, m := range mappings(smaps) {
		if m.inode != st.Ino || m.writable || m.anonymous > 0 {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return dropped, fmt.Errorf("residency: madvise %x-%x: %w", m.start, m.end, errno)
		}
		dropped += int64(m.end - m.start)
	}
	return dropped, nil
}

// mapping is one entry of /proc/PID/smaps: its range, whether it is writable, its file's
// inode (0 for anonymous memory) and its anonymous (copy-on-write or never file-backed) kB.
type mapping struct {
	start, end uintptr
	writable   bool
	inode      uint64
	anonymous  int64
}

// mappings reads /proc/PID/smaps: a header line per mapping
// ("00400000-011c4000 r-xp 00000000 fe:00 10018822   /path") followed by "Key:  N kB" lines.
func mappings(smaps []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := parseHeader(line); ok {
			out = append(out, m)
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok && len(out) > 0 {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				out[len(out)-1].anonymous, _ = strconv.ParseInt(string(f[0]), 10, 64)
			}
		}
	}
	return out
}

// parseHeader reads a mapping's header line; the "Key: value" lines are not headers (their
// first field has no '-' range).
func parseHeader(line []byte) (mapping, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 || len(f[1]) != 4 {
		return mapping{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	inode, err3 := strconv.ParseUint(string(f[4]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{start: uintptr(start), end: uintptr(end), writable: f[1][1] == 'w', inode: inode}, true
}
