package provider

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A call's timer lets go of the call's body when the call stops it: a stopped timer stays in
// the runtime's heap of timers for a while, and kept the body with all the call's request
// (some 150 requests after the bench's saturating scenarios). It times out the call that
// owns it, and only that one: a stop or reset after the call let it go touches nothing of the
// call that has it next, and a timer that fired during its call is not recycled.
func TestACallTimerLetsGoOfItsCall(t *testing.T) {
	t.Run("times out its call", func(t *testing.T) {
		tb := &timedBody{}
		tb.call.parent = t.Context()
		ct := startCallTimer(time.Millisecond, tb)
		if !ran(asChan(tb.call.Done())) || !errors.Is(tb.call.Cause(), errFirstByte) {
			t.Fatalf("the call did not time out: %v", tb.call.Cause())
		}
		ct.stop(tb)
		if !ct.spent.Load() {
			t.Fatal("a timer that fired is marked for recycling")
		}
		for x, _ := callTimers.Get().(*callTimer); x != nil; x, _ = callTimers.Get().(*callTimer) {
			if x == ct {
				t.Fatal("a timer that fired during its call was recycled")
			}
		}
	})
	t.Run("stopped, keeps nothing of its call", func(t *testing.T) {
		var collected atomic.Int32
		tb := &timedBody{}
		runtime.AddCleanup(tb, func(*atomic.Int32) { collected.Add(1) }, &collected)
		ct := startCallTimer(time.Hour, tb)
		if ct.b.Load() != tb {
			t.Fatal("the timer does not reach its call's body")
		}
		ct.stop(tb)
		tb = nil
		for deadline := time.Now().Add(5 * time.Second); collected.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("a stopped call timer keeps its call's body alive")
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		runtime.KeepAlive(ct)
	})
	t.Run("a late stop or reset is the old call's", func(t *testing.T) {
		first, next := &timedBody{}, &timedBody{}
		next.call.parent = t.Context()
		ct := startCallTimer(time.Hour, first)
		ct.stop(first)
		ct2 := startCallTimer(time.Hour, next)
		defer ct2.stop(next)
		ct.stop(first) // a body closed twice
		ct.reset(first, time.Millisecond)
		if ct2.b.Load() != next {
			t.Fatal("the old call's stop let the next call's body go")
		}
		time.Sleep(20 * time.Millisecond)
		if next.call.Err() != nil {
			t.Fatalf("the old call's reset timed out the next call: %v", next.call.Cause())
		}
	})
}
