package statusdata

import (
	"context"
	"log/slog"
	"time"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/verify"
)

// ProbeLease names the database lease that lets one replica at a time run the probe.
const ProbeLease = "status-probe"

// Probe keeps the model matrix fresh when traffic is thin: every Interval, the replica that
// holds the lease sends each public (model, text-generation family) pair the smallest
// request through the model's first route and counts the answer for that pair. Probes call
// the provider adapters directly, as capability verification does: they carry no client
// key, belong to no profile and are never charged; they do not count in the component
// numbers, which are live traffic only.
type Probe struct {
	Store     *store.Store
	Snapshots func() *snapshot.Snapshot
	Prober    *verify.Prober
	Recorder  *Recorder
	Interval  time.Duration
	// Holder names this replica in the lease (unique per process).
	Holder string
	Log    *slog.Logger
	Now    func() time.Time
}

// Run probes every Interval until ctx ends.
func (p *Probe) Run(ctx context.Context) {
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		if _, err := p.Once(ctx); err != nil && ctx.Err() == nil && p.Log != nil {
			p.Log.Warn("status probe failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once takes the lease for one interval and, when this replica has it, probes every pair
// and flushes the counts. It reports how many pairs it probed (0 without the lease).
func (p *Probe) Once(ctx context.Context) (int, error) {
	// Two intervals: the holder renews it every round, even when a round runs long; a
	// replica that died gives way after two intervals.
	ok, err := p.Store.TakeLease(ctx, ProbeLease, p.Holder, 2*p.Interval)
	if err != nil || !ok {
		return 0, err
	}
	snap := p.Snapshots()
	if snap == nil {
		return 0, nil
	}
	targets, err := verify.Targets(snap, nil, nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range targets {
		t := &targets[i]
		if !public(t.Model, t.Family) {
			continue
		}
		err := p.Prober.Baseline(ctx, t)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		end := time.Now()
		if p.Now != nil {
			end = p.Now()
		}
		// A rejected or failed baseline both mean the pair does not answer right now.
		p.Recorder.RecordProbe(t.Model.ID, t.Family, end, err == nil)
		if err != nil && p.Log != nil {
			p.Log.Info("status probe: pair failed", "model", t.Model.ID, "family", t.Family, "err", err)
		}
		n++
	}
	return n, p.Recorder.Flush(ctx)
}

func public(m *snapshot.Model, family string) bool {
	for _, f := range PublicFamilies(m) {
		if f == family {
			return true
		}
	}
	return false
}
