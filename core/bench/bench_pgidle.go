package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store/pgcluster"
)

// The PostgreSQL idle scenario (issue 35): what the database burns while the gateway serves
// nothing, its timers alone (liveness reports, lease upkeep, the batch runner's look for work,
// the status recorder, the catalogue's safety-net reload). It runs before the load scenarios,
// on a gateway that has just been provisioned and probed.

const (
	// pgIdleQuiet lets the probes' lease go back (its idle time and a renewal) first.
	pgIdleQuiet = 5 * time.Second
	// pgIdleWindow is the measured idle time: the catalogue's reload (once a minute) and the
	// sweeps (every 5 s) need a long window to count at their rate.
	pgIdleWindow = 30 * time.Second
	// pgIdleTarget is issue 35's bound, in percent of one core.
	pgIdleTarget = 1.0
)

// pgIdle measures and prints PostgreSQL's CPU and transactions per second with the gateway
// idle. The CPU is the time on CPU of the server's processes (schedstat, nanoseconds: an
// idle server uses too little for stat's 10 ms ticks); the transactions are the database's
// committed and rolled-back counts, which backends publish up to 10 s late: over a window
// of steady idling the lag at its start and at its end cancel out.
func (b *bench) pgIdle(ctx context.Context, w io.Writer) error {
	if err := sleepCtx(ctx, pgIdleQuiet); err != nil {
		return err
	}
	cpu0, cpuOK := pgcluster.CPUTime()
	tx0, txErr := b.dbXacts(ctx)
	if err := sleepCtx(ctx, pgIdleWindow); err != nil {
		return err
	}
	cpu1, _ := pgcluster.CPUTime()
	tx1, err := b.dbXacts(ctx)
	if txErr == nil {
		txErr = err
	}
	cpu := "not measured (PostgreSQL is not the bench's own)"
	target := ""
	if cpuOK {
		pct := 100 * (cpu1 - cpu0).Seconds() / pgIdleWindow.Seconds()
		cpu = fmt.Sprintf("%.3f %% of a core", pct)
		target = fmt.Sprintf(" (target < %.0f %%: %s)", pgIdleTarget, verdict(pct < pgIdleTarget))
	}
	txs := fmt.Sprintf("not measured (%v)", txErr)
	if txErr == nil {
		// Each dbXacts call is a transaction of its own.
		txs = fmt.Sprintf("%.2f a second", float64(tx1-tx0-1)/pgIdleWindow.Seconds())
	}
	fmt.Fprintf(w, "\n0. PostgreSQL with the gateway idle for %v: CPU %s%s; transactions %s\n", pgIdleWindow, cpu, target, txs)
	return nil
}

// dbXacts is the gateway database's committed and rolled-back transactions.
func (b *bench) dbXacts(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	return n, err
}
