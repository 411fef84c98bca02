package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store/pgcluster"
)

func TestLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ncpu int
		want layout
		err  bool
	}{
		{"two", 2, layout{name: "two", proxy: "0", load: "1", upstream: "1", loadCPUs: 1, busy: [2][]int{{0}, {1}}}, false},
		// The default keeps the 2-CPU layout on any machine.
		{"", 16, layout{name: "two", proxy: "0", load: "1", upstream: "1", loadCPUs: 1, busy: [2][]int{{0}, {1}}}, false},
		{"many", 16, layout{name: "many", proxy: "0", pg: "1-3", upstream: "4-6", load: "7-15", loadCPUs: 9,
			busy: [2][]int{{0}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}}, false},
		{"many", 4, layout{name: "many", proxy: "0", pg: "1", upstream: "2", load: "3", loadCPUs: 1, busy: [2][]int{{0}, {1, 2, 3}}}, false},
		{"many", 3, layout{}, true},
		{"many", 2, layout{}, true},
		{"spread", 16, layout{}, true},
	} {
		got, err := newLayout(tc.name, tc.ncpu)
		if (err != nil) != tc.err {
			t.Errorf("%q on %d CPUs: error %v, want error %v", tc.name, tc.ncpu, err, tc.err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q on %d CPUs:\n got %+v\nwant %+v", tc.name, tc.ncpu, got, tc.want)
		}
	}
}

// cpusAllowed is /proc/<pid>/status's Cpus_allowed_list.
func cpusAllowed(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("pid %d: no Cpus_allowed_list", pid)
	return ""
}

// startPG starts a throwaway cluster for a test (skipping it where there is none), stopped
// at the test's end.
func startPG(t *testing.T) *pgcluster.Cluster {
	t.Helper()
	pg, err := pgcluster.Start(context.Background(), pgcluster.Options{})
	if err != nil {
		t.Skipf("no PostgreSQL here: %v", err)
	}
	t.Cleanup(pg.Stop)
	return pg
}

// backendPID opens a connection to pg, open until the test's end, and is its backend's pid.
func backendPID(t *testing.T, pg *pgcluster.Cluster) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// pinPostgres moves the postmaster and its running processes to PostgreSQL's CPUs, and the
// backends it starts afterwards (one per new connection) are born there.
func TestPinPostgresMovesThePostmasterAndLaterBackends(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset and 2 CPUs")
	}
	pg := startPG(t)
	before := backendPID(t, pg)
	all := cpusAllowed(t, before)
	if all == "1" {
		t.Skip("this test process is pinned to CPU 1 already")
	}
	b := &bench{pinned: true, pg: pg, layout: layout{pg: "1"}}
	if err := b.pinPostgres(); err != nil {
		t.Fatal(err)
	}
	if got := cpusAllowed(t, before); got != "1" {
		t.Errorf("a running backend: CPUs %q after pinning, want 1 (was %q)", got, all)
	}
	pid := backendPID(t, pg)
	if got := cpusAllowed(t, pid); got != "1" {
		t.Errorf("a backend started after pinning: CPUs %q, want 1", got)
	}
	// The two-CPU layout leaves PostgreSQL where the load generator is.
	b.layout.pg = ""
	if err := b.pinPostgres(); err != nil {
		t.Errorf("layout without PostgreSQL CPUs: %v", err)
	}
}

// -pg-realtime puts the postmaster's running processes and the backends it starts afterwards
// under SCHED_RR; without it nothing changes.
func TestPinPostgresRunsItRealtime(t *testing.T) {
	if _, err := exec.LookPath("chrt"); err != nil {
		t.Skip("needs chrt")
	}
	pg := startPG(t)
	// policy is /proc/<pid>/stat's field 41: 0 SCHED_OTHER, 2 SCHED_RR.
	policy := func(pid int) string {
		t.Helper()
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		return f[41-3]
	}
	before := backendPID(t, pg)
	b := &bench{pg: pg}
	if err := b.pinPostgres(); err != nil {
		t.Fatal(err)
	}
	if got := policy(before); got != "0" {
		t.Fatalf("without -pg-realtime a backend's policy is %s, want 0", got)
	}
	b.cfg.pgRealtime = true
	if err := b.pinPostgres(); err != nil {
		if strings.Contains(err.Error(), "not permitted") {
			t.Skipf("no CAP_SYS_NICE here: %v", err)
		}
		t.Fatal(err)
	}
	if got := policy(before); got != "2" {
		t.Errorf("a running backend: policy %s, want 2 (SCHED_RR)", got)
	}
	if got := policy(backendPID(t, pg)); got != "2" {
		t.Errorf("a backend started afterwards: policy %s, want 2 (SCHED_RR)", got)
	}
}
