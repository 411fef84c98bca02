package statusdata

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"modelgateway/core/store"
)

// Event is one finished request as the status site counts it.
type Event struct {
	EndpointFamily, Model string
	// Status is "ok" or the outcome's code (see Classify).
	Status string
	// FirstByte is when the first answer event went out (time to first token for streams);
	// zero when unknown, then End is used.
	Start, FirstByte, End time.Time
}

// DefaultFlushInterval is how often a replica adds its counts to PostgreSQL.
const DefaultFlushInterval = 10 * time.Second

// Recorder counts events in memory and adds them to PostgreSQL on Flush. The hot path takes
// one mutex and touches two map entries; the database sees one transaction per flush.
type Recorder struct {
	Store *store.Store
	Log   *slog.Logger

	mu     sync.Mutex
	comps  map[compKey]*store.StatusMinute
	models map[modelKey]*store.ModelMinute
}

type compKey struct {
	component string
	minute    time.Time
}

type modelKey struct {
	model, family string
	minute        time.Time
}

// Record counts a request outcome for its component and its (model, endpoint family).
func (r *Recorder) Record(e Event) {
	counts, ok := Classify(e.Status)
	comp := ComponentOf(e.EndpointFamily)
	if !counts || comp == "" {
		return
	}
	first := e.FirstByte
	if first.IsZero() {
		first = e.End
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addComponent(comp, e.End, ok, first.Sub(e.Start))
	r.addModel(e.Model, e.EndpointFamily, e.End, ok)
}

// RecordAdmin counts one admin RPC; counts is false for client-caused failures.
func (r *Recorder) RecordAdmin(start, end time.Time, counts, ok bool) {
	if !counts {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addComponent(AdminAPI, end, ok, end.Sub(start))
}

// RecordProbe counts a synthetic probe for its (model, endpoint family) only: the component
// numbers are live traffic.
func (r *Recorder) RecordProbe(model, family string, end time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addModel(model, family, end, ok)
}

func (r *Recorder) addComponent(comp string, end time.Time, ok bool, latency time.Duration) {
	k := compKey{comp, end.UTC().Truncate(time.Minute)}
	c := r.comps[k]
	if c == nil {
		if r.comps == nil {
			r.comps = map[compKey]*store.StatusMinute{}
		}
		c = &store.StatusMinute{Component: comp, Minute: k.minute, Latency: make([]int64, len(LatencyBounds)+1)}
		r.comps[k] = c
	}
	if ok {
		c.OK++
	} else {
		c.Failed++
	}
	c.Latency[bucket(latency)]++
}

func (r *Recorder) addModel(model, family string, end time.Time, ok bool) {
	if model == "" {
		return
	}
	k := modelKey{model, family, end.UTC().Truncate(time.Minute)}
	m := r.models[k]
	if m == nil {
		if r.models == nil {
			r.models = map[modelKey]*store.ModelMinute{}
		}
		m = &store.ModelMinute{Model: model, EndpointFamily: family, Minute: k.minute}
		r.models[k] = m
	}
	if ok {
		m.OK++
		if end.After(m.LastSuccess) {
			m.LastSuccess = end
		}
	} else {
		m.Failed++
	}
}

// Flush adds what was counted since the last flush to PostgreSQL. On failure the counts are
// kept and added to the next flush, so a database hiccup loses nothing.
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	comps, models := r.comps, r.models
	r.comps, r.models = nil, nil
	r.mu.Unlock()
	if len(comps) == 0 && len(models) == 0 {
		return nil
	}
	cs := make([]store.StatusMinute, 0, len(comps))
	for _, c := range comps {
		cs = append(cs, *c)
	}
	ms := make([]store.ModelMinute, 0, len(models))
	for _, m := range models {
		ms = append(ms, *m)
	}
	err := r.Store.AddStatus(ctx, cs, ms)
	if err != nil {
		r.mu.Lock()
		for k, c := range comps {
			if cur := r.comps[k]; cur != nil {
				cur.OK, cur.Failed = cur.OK+c.OK, cur.Failed+c.Failed
				for i := range c.Latency {
					cur.Latency[i] += c.Latency[i]
				}
			} else {
				if r.comps == nil {
					r.comps = map[compKey]*store.StatusMinute{}
				}
				r.comps[k] = c
			}
		}
		for k, m := range models {
			if cur := r.models[k]; cur != nil {
				cur.OK, cur.Failed = cur.OK+m.OK, cur.Failed+m.Failed
				if m.LastSuccess.After(cur.LastSuccess) {
					cur.LastSuccess = m.LastSuccess
				}
			} else {
				if r.models == nil {
					r.models = map[modelKey]*store.ModelMinute{}
				}
				r.models[k] = m
			}
		}
		r.mu.Unlock()
	}
	return err
}

// Run flushes every interval (DefaultFlushInterval when 0) until ctx ends, then once more.
func (r *Recorder) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.logErr(r.Flush(fctx))
			cancel()
			return
		case <-t.C:
			r.logErr(r.Flush(ctx))
		}
	}
}

func (r *Recorder) logErr(err error) {
	if err != nil && r.Log != nil {
		r.Log.Warn("status counts not flushed; kept for the next flush", "err", err)
	}
}
