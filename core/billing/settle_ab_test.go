package billing

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"modelgateway/core/store"
)

// BenchmarkSettleAB compares two variants of the settlement's schema in one process: two
// databases, SETTLE_AB_A and SETTLE_AB_B (SQL run on each after the migrations, e.g. an index
// dropped; either may be empty), settle batches of 27 charges (SETTLE_AB_SIZE) in turn, one connection each,
// and the backend's CPU time of every batch is read from /proc (schedstat, nanoseconds). Each
// iteration is one batch on each, A first and B first in turns, so that a loaded machine's drift falls on
// both alike; it reports the medians per charge and the median of the pairs' differences,
// which separates a change of a microsecond or two that interleaved whole runs do not:
// SETTLE_AB_B="$(cat migrations/0018_charge_rows.up.sql)" go test ./core/billing -run '^$' -bench SettleAB -benchtime 500x
// (built at the commit before 0018). A variant that rebuilds an index can change which index
// a generic plan picks: check a surprising number with auto_explain before believing it.
func BenchmarkSettleAB(b *testing.B) {
	ctx := context.Background()
	size, warm := 27, 20 // the bench's group commit; batches before the plans settle
	if v, err := strconv.Atoi(os.Getenv("SETTLE_AB_SIZE")); err == nil && v > 0 {
		size = v
	}
	type side struct {
		f       *fixture
		st      *store.Store
		pid     int
		replica uuid.UUID
		cpu     []float64
	}
	open := func(sql string) *side {
		f := newFixture(b, "100000000")
		if sql != "" {
			if _, err := f.st.Pool.Exec(ctx, sql); err != nil {
				b.Fatal(err)
			}
		}
		cfg := f.st.Pool.Config().Copy()
		cfg.MaxConns, cfg.MinConns = 1, 1
		one, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(one.Close)
		s := &side{f: f, st: &store.Store{Pool: one}, replica: uuid.New()}
		if err := one.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&s.pid); err != nil {
			b.Fatal(err)
		}
		return s
	}
	sides := [2]*side{open(os.Getenv("SETTLE_AB_A")), open(os.Getenv("SETTLE_AB_B"))}
	cost := dec("0.001")
	batch := make([]store.Settlement, size)
	n := 0
	for b.Loop() {
		order := sides
		if n/size%2 == 1 {
			order[0], order[1] = sides[1], sides[0] // neither side always goes first
		}
		for _, s := range order {
			for i := range batch {
				// Gateway ids grow with time (uuid v7), as the gateway's own do.
				r := record(s.f.p, fmt.Sprintf("gw-%012d", n+i), &cost)
				r.KeyID = s.f.key
				r.Attempts = []store.AttemptRecord{{Provider: "openai", UpstreamModel: "gpt-4o-mini", Status: 200, DurationMS: 12}}
				batch[i] = store.Settlement{Record: r}
			}
			c0 := schedCPU(s.pid)
			if _, err := s.st.Settle(ctx, s.replica, batch); err != nil {
				b.Fatal(err)
			}
			if n >= warm*size {
				s.cpu = append(s.cpu, float64(schedCPU(s.pid)-c0)/1e3/float64(size))
			}
		}
		n += size
	}
	if len(sides[0].cpu) == 0 {
		return
	}
	diff := make([]float64, len(sides[0].cpu))
	for i := range diff {
		diff[i] = sides[1].cpu[i] - sides[0].cpu[i]
	}
	b.ReportMetric(median(sides[0].cpu), "A-cpu-µs/charge")
	b.ReportMetric(median(sides[1].cpu), "B-cpu-µs/charge")
	b.ReportMetric(median(diff), "B-A-µs/charge")
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// schedCPU is a process's CPU time so far in nanoseconds (/proc/PID/schedstat); 0 without it.
func schedCPU(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseInt(f[0], 10, 64)
	return v
}
