package residency

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

func TestMappingsReadsSmaps(t *testing.T) {
	data, err := os.ReadFile("testdata/smaps.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0x11c4000, inode: 10018822},
		{start: 0x11c4000, end: 0x27ac000, inode: 10018822, anonymous: 8},
		{start: 0x27ac000, end: 0x2887000, writable: true, inode: 10018822, anonymous: 112},
		{start: 0xc000000000, end: 0xc004000000, writable: true, anonymous: 17328},
		{start: 0x7f2c1a200000, end: 0x7f2c1a228000, inode: 2236},
	}
	got := mappings(data)
	if len(got) != len(want) {
		t.Fatalf("mappings: %d, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// written lives in the executable's writable, file-backed data (it has a non-zero
// initialiser): dropping that mapping would give back the file's bytes, not the program's.
var written = [3 * 4096]byte{1: 1}

func TestDropTakesTheExecutablesPagesOutAndKeepsItsData(t *testing.T) {
	for i := range written {
		written[i] = byte(i%251) + 2
	}
	before := exeResident(t)
	if before.readOnly < 1<<20 {
		t.Fatalf("the test binary has only %d bytes of its code and read-only data resident: nothing to measure", before.readOnly)
	}
	n, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	after := exeResident(t)
	t.Logf("executable's read-only mappings: %d bytes resident before, %d after (of %d dropped)", before.readOnly, after.readOnly, n)
	if n < before.readOnly {
		t.Errorf("Drop covered %d bytes of mappings, fewer than the %d resident before", n, before.readOnly)
	}
	// The code that runs from here on (reading smaps included) faults its pages back in, 64 KiB
	// around each fault: in a binary this small that is about half of it, in the gateway's a
	// fifth.
	if after.readOnly > before.readOnly*3/4 {
		t.Errorf("resident read-only pages of the executable: %d before Drop, %d after: not dropped", before.readOnly, after.readOnly)
	}
	for i := range written {
		if written[i] != byte(i%251)+2 {
			t.Fatalf("written[%d] = %d after Drop, want %d: a writable mapping was dropped", i, written[i], byte(i%251)+2)
		}
	}
	// The dropped code still runs: a function not called before comes back from the file.
	if s := strconv.Quote("résidence"); s != `"résidence"` {
		t.Errorf("Quote after Drop = %s", s)
	}
}

type resident struct{ readOnly int64 }

// exeResident sums the resident bytes (smaps' Rss) of the executable's read-only mappings.
func exeResident(t *testing.T) resident {
	t.Helper()
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var r resident
	var in bool
	for _, line := range splitLines(data) {
		if m, ok := parseHeader(line); ok {
			in = m.inode == ino && !m.writable
			continue
		}
		if in && len(line) > 4 && string(line[:4]) == "Rss:" {
			var kb int64
			for _, c := range line[4:] {
				if c >= '0' && c <= '9' {
					kb = kb*10 + int64(c-'0')
				}
			}
			r.readOnly += kb << 10
		}
	}
	return r
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}
