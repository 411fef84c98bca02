package batches_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openai/openai-go/v3"

	"modelgateway/core/gatewaytest"
)

// TestBatchThroughputMeasure measures a batch of GATEWAY_BATCH_MEASURE items (chat items on
// the canned upstream, one replica, default concurrency): items per second, items per CPU
// second of the replica, database transactions per item, and the replica's peak RSS. It
// only runs when GATEWAY_BATCH_MEASURE is set (it is a measurement, not a check);
// GATEWAY_BATCH_MEASURE_CONCURRENCY sets the replica's GATEWAY_BATCH_CONCURRENCY.
func TestBatchThroughputMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GATEWAY_BATCH_MEASURE"))
	if n <= 0 {
		t.Skip("set GATEWAY_BATCH_MEASURE=<items> to measure")
	}
	var env []string
	if c := os.Getenv("GATEWAY_BATCH_MEASURE_CONCURRENCY"); c != "" {
		env = append(env, "GATEWAY_BATCH_CONCURRENCY="+c)
	}
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: env})
	ctx := context.Background()
	c := sdk(g, g.Key)
	lines := make([]string, n)
	for i := range lines {
		lines[i] = chatLine(fmt.Sprintf("i%d", i), "m-openai")
	}
	file := upload(t, c, lines...)
	pid := g.Cmd.Process.Pid
	xacts := func() int64 {
		var v int64
		if err := g.Pool().QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// With pg_stat_statements loaded (shared_preload_libraries on TEST_DATABASE_URL's server),
	// the statements behind the transactions are listed too.
	_, statErr := g.Pool().Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	if statErr == nil {
		_, statErr = g.Pool().Exec(ctx, `SELECT pg_stat_statements_reset()`)
	}
	// PostgreSQL counts a backend's transactions in pg_stat_database when it flushes its
	// statistics: at most once a second while busy, and up to 10 s after it went idle. The
	// count is read after quiet spells of statsLag, and the replica's background work (its
	// heartbeat, the ledger's flushes, the runner's sweeps) is measured over one of them and
	// taken off.
	const statsLag = 11 * time.Second
	time.Sleep(statsLag)
	xa, ta := xacts(), time.Now()
	time.Sleep(statsLag)
	cpu0, x0, start := procCPU(t, pid), xacts(), time.Now()
	background := float64(x0-xa) / start.Sub(ta).Seconds()
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	polls := 0
	for {
		polls++ // one transaction each
		got, err := c.Batches.Get(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == openai.BatchStatusCompleted {
			if got.RequestCounts.Completed != int64(n) {
				t.Fatalf("counts %+v", got.RequestCounts)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took, cpu := time.Since(start), procCPU(t, pid)-cpu0
	time.Sleep(statsLag)
	x := float64(xacts()-x0) - background*time.Since(start).Seconds() - float64(polls)
	t.Logf("%d items in %s: %.0f items/s, %.0f items per CPU second of the replica, %.3f transactions per item (less %.1f/s of background and %d polls), peak RSS %s",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(n)/cpu.Seconds(), x/float64(n), background, polls, peakRSS(t, pid))
	if statErr == nil {
		logStatements(t, g.Pool(), n)
	}
}

// logStatements lists the statements run in the database since the reset, most called first,
// with their calls per item.
func logStatements(t *testing.T, pool *pgxpool.Pool, n int) {
	rows, err := pool.Query(context.Background(), `SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 25`)
	if err != nil {
		t.Logf("pg_stat_statements: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var calls int64
		var q string
		if err := rows.Scan(&calls, &q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%6.3f/item %s", float64(calls)/float64(n), q)
	}
}

// procCPU is a process's user and system CPU time so far.
func procCPU(t *testing.T, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

func peakRSS(t *testing.T, pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}
