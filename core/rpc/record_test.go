package rpc

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// A request's first record keeps its end time and attempt in the request's allocation (no
// allocation of their own); a later record (a realtime session's parts) has its own, and
// the first stays as it was.
func TestRecordsKeepTheirOwnTimesAndAttempts(t *testing.T) { // not parallel: AllocsPerRun
	k := &snapshot.Key{ID: uuid.New(), ProfileID: uuid.New()}
	start := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	outcome := func(end time.Time, provider string, attempts int) *Outcome {
		o := &Outcome{RequestID: "r", StartTime: start, EndTime: end}
		for range attempts {
			o.Attempts = append(o.Attempts, Attempt{Provider: provider, UpstreamModel: "m", Status: 200, Start: start, End: end})
		}
		return o
	}
	b := &billed{k: k}
	first := b.record(outcome(start.Add(time.Second), "a", 1))
	second := b.record(outcome(start.Add(time.Minute), "b", 1))
	third := b.record(outcome(start.Add(time.Hour), "c", 2))
	want := []store.AttemptRecord{{Provider: "a", UpstreamModel: "m", Status: 200, DurationMS: 1000}}
	if !first.EndTime.Equal(start.Add(time.Second)) || !reflect.DeepEqual(first.Attempts, want) {
		t.Fatalf("the first record changed: end %v, attempts %+v", first.EndTime, first.Attempts)
	}
	if !second.EndTime.Equal(start.Add(time.Minute)) || second.Attempts[0].Provider != "b" || second.Attempts[0].DurationMS != 60000 {
		t.Fatalf("second record: end %v, attempts %+v", second.EndTime, second.Attempts)
	}
	if len(third.Attempts) != 2 || third.Attempts[1].Provider != "c" || !third.EndTime.Equal(start.Add(time.Hour)) {
		t.Fatalf("third record: end %v, attempts %+v", third.EndTime, third.Attempts)
	}
	if first.EndTime == second.EndTime || &first.Attempts[0] == &second.Attempts[0] {
		t.Fatal("two records share an end time or an attempt")
	}
	o := outcome(start.Add(time.Second), "a", 1)
	bs := make([]billed, 102)
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		b := &bs[i]
		b.k = k
		i++
		_ = b.record(o)
	}); n != 0 {
		t.Errorf("a request's first record: %v allocations, want 0", n)
	}
}
