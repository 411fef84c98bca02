package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"modelgateway/core/billing"
)

// Gauges are the sources of the gauges, read on each collection (a scrape), never per request.
// Any of them may be nil.
type Gauges struct {
	// SnapshotLoadedAt is when the in-memory catalogue snapshot was last built.
	SnapshotLoadedAt func() time.Time
	// Pool is the database pool's statistics.
	Pool func() *pgxpool.Stat
	// Ledger is the money in flight on this replica, in Currency.
	Ledger   func() billing.InFlight
	Currency func() string
	// RealtimeSessions is the number of realtime sessions open on this replica.
	RealtimeSessions func() int
}

// Recommended bucket boundaries of the OpenTelemetry GenAI semantic conventions.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	tpotBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	batchBuckets    = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
	// Fine below 10 ms, where the target of the durable charge's wait lies (2 ms): a group
	// commit is one settlement transaction, and the wait is about one and a half of them.
	settleBuckets     = []float64{0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.006, 0.008, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	chargeWaitBuckets = []float64{0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 1, 2.5}
)

// instruments are the synchronous instruments recorded outside the worker (billing's
// observers); the worker's own are series it aggregates (series.go).
type instruments struct {
	batch  metric.Int64Histogram
	settle metric.Float64Histogram
}

func newInstruments(m metric.Meter, g Gauges, dropped *atomic.Int64) (*instruments, error) {
	var (
		in   instruments
		errs []error
	)
	f64h := func(name, desc, unit string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit(unit), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	i64h := func(name, desc, unit string, buckets []float64) metric.Int64Histogram {
		h, err := m.Int64Histogram(name, metric.WithDescription(desc), metric.WithUnit(unit), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	in.batch = i64h("gateway.settlement.batch.size", "Requests settled per settlement transaction.", "{request}", batchBuckets)
	in.settle = f64h("gateway.settlement.duration", "Duration of a settlement transaction, by outcome.", "s", settleBuckets)

	dropGauge, err := m.Int64ObservableCounter("gateway.telemetry.dropped", metric.WithDescription("Telemetry records lost because the queue was full."))
	errs = append(errs, err)
	gauge := func(name, desc, unit string) metric.Float64ObservableGauge {
		o, err := m.Float64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return o
	}
	snapAge := gauge("gateway.snapshot.age", "Time since the in-memory catalogue snapshot was built.", "s")
	holds := gauge("gateway.ledger.held", "Money held for requests in flight on this replica, by currency.", "")
	leases := gauge("gateway.ledger.leased", "Money leased from the database by this replica, by currency.", "")
	pending := gauge("gateway.settlement.pending", "Finished requests waiting for settlement on this replica.", "{request}")
	conns := gauge("gateway.db.pool.connections", "Database pool connections by state (acquired, idle), and the pool's maximum (max).", "{connection}")
	sessions := gauge("gateway.realtime.sessions", "Realtime sessions open on this replica.", "{session}")
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("telemetry instruments: %w", err)
		}
	}
	var (
		acquired = metric.WithAttributes(attribute.String("state", "acquired"))
		idle     = metric.WithAttributes(attribute.String("state", "idle"))
		max      = metric.WithAttributes(attribute.String("state", "max"))
	)
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(dropGauge, dropped.Load())
		if g.SnapshotLoadedAt != nil {
			if at := g.SnapshotLoadedAt(); !at.IsZero() {
				o.ObserveFloat64(snapAge, time.Since(at).Seconds())
			}
		}
		if g.Ledger != nil {
			s := g.Ledger()
			cur := ""
			if g.Currency != nil {
				cur = g.Currency()
			}
			byCurrency := metric.WithAttributes(attribute.String("currency", cur))
			o.ObserveFloat64(holds, s.Holds.InexactFloat64(), byCurrency)
			o.ObserveFloat64(leases, s.Leases.InexactFloat64(), byCurrency)
			o.ObserveFloat64(pending, float64(s.Pending))
		}
		if g.Pool != nil {
			s := g.Pool()
			o.ObserveFloat64(conns, float64(s.AcquiredConns()), acquired)
			o.ObserveFloat64(conns, float64(s.IdleConns()), idle)
			o.ObserveFloat64(conns, float64(s.MaxConns()), max)
		}
		if g.RealtimeSessions != nil {
			o.ObserveFloat64(sessions, float64(g.RealtimeSessions()))
		}
		return nil
	}, dropGauge, snapAge, holds, leases, pending, conns, sessions)
	if err != nil {
		return nil, fmt.Errorf("telemetry gauges: %w", err)
	}
	return &in, nil
}

// ChargeWaitObserver records how long answers' ends waited for their charges; give it to
// billing.Ledger.OnCharge.
// It is called once per request, on the request's goroutine: its histogram is a series of
// the worker's store (series.go), under a lock of its own, not an SDK instrument.
func (t *Telemetry) ChargeWaitObserver() func(wait time.Duration) {
	if !t.metricsOn {
		return func(time.Duration) {}
	}
	waits := t.chargeWaits
	return func(wait time.Duration) { waits.measureFloat(wait.Seconds()) }
}

// SettlementObserver records settlement transactions; give it to billing.Ledger.OnSettle.
func (t *Telemetry) SettlementObserver() func(batch int, took time.Duration, err error) {
	ok := metric.WithAttributes(attribute.String("outcome", "ok"))
	failed := metric.WithAttributes(attribute.String("outcome", "error"))
	return func(batch int, took time.Duration, err error) {
		if !t.metricsOn {
			return
		}
		ctx := context.Background()
		if err != nil {
			t.inst.settle.Record(ctx, took.Seconds(), failed)
			return
		}
		t.inst.batch.Record(ctx, int64(batch))
		t.inst.settle.Record(ctx, took.Seconds(), ok)
	}
}
