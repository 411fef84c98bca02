package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Fault tests of issue 13, on real processes (see fault_harness_test.go). Each ends with
// checkLedger.

// loadSpec is a client load: workers send f-chat requests in turn to the live replicas,
// streamed and not, half of them with a client-chosen request id.
type loadSpec struct {
	key, profile string
	workers      int
	replicas     func() []*replica
	prefix       string
	// prompt, when set, is the user text (directives included).
	prompt string
	// generatedIDs leaves every request id to the gateway (no reservation in the database).
	generatedIDs bool
	// refusedPause is waited after an answer that is not a 200, so that a refused client does
	// not spin.
	refusedPause time.Duration
}

// running is a load in progress.
type running struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	inFlight atomic.Int64
}

func (r *running) halt() {
	close(r.stop)
	r.wg.Wait()
}

func (f *faultEnv) load(ls loadSpec, rec *record) *running {
	run := &running{stop: make(chan struct{})}
	if ls.refusedPause == 0 {
		ls.refusedPause = 50 * time.Millisecond
	}
	for w := range ls.workers {
		run.wg.Add(1)
		go func() {
			defer run.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-run.stop:
					return
				default:
				}
				var live []*replica
				for _, r := range ls.replicas() {
					if r.alive() {
						live = append(live, r)
					}
				}
				if len(live) == 0 {
					return
				}
				r := live[(w+i)%len(live)]
				q := chatReq{key: ls.key, profile: ls.profile, stream: (w+i)%2 == 0, prompt: ls.prompt}
				if i%2 == 0 && !ls.generatedIDs {
					q.id = fmt.Sprintf("%s-%d-%d", ls.prefix, w, i)
				}
				run.inFlight.Add(1)
				o := r.chat(q)
				run.inFlight.Add(-1)
				rec.add(o)
				if !o.full {
					select {
					case <-run.stop:
						return
					case <-time.After(ls.refusedPause):
					}
				}
			}
		}()
	}
	return run
}

// kill -9 of one of two replicas with answers in flight: every answer a client received in
// full is charged exactly once, and the killed replica's records do not stay in_progress.
func TestFaultKillReplicaWithAnswersInFlight(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{chunkDelay: 20 * time.Millisecond})
	a := f.start("a")
	b := f.start("b")
	key, pid := a.profile(t, "1000")
	rec := &record{}
	replicas := []*replica{a, b}
	run := f.load(loadSpec{key: key, profile: pid, workers: 12, prefix: "kill", replicas: func() []*replica { return replicas }}, rec)
	// Enough answers delivered by both, and several in flight on a.
	waitFor(t, 60*time.Second, "answers from both replicas", func() bool {
		return rec.count(func(o seen) bool { return o.full && o.replica == "a" }) >= 10 &&
			rec.count(func(o seen) bool { return o.full && o.replica == "b" }) >= 10 && run.inFlight.Load() >= 8
	})
	a.kill()
	t.Logf("killed a with %d in flight; a delivered %d in full", run.inFlight.Load(), rec.count(func(o seen) bool { return o.full && o.replica == "a" }))
	before := rec.count(full)
	waitFor(t, 60*time.Second, "answers from the survivor", func() bool { return rec.count(full) >= before+10 })
	run.halt()
	outs := rec.snapshot()
	if n := rec.count(func(o seen) bool { return o.replica == "a" && !o.full }); n == 0 {
		t.Error("no request of the killed replica was cut: the kill found nothing in flight")
	}
	f.checkLedger(t, outs)
	if err := b.term(t, 30*time.Second); err != nil {
		t.Errorf("b exited with %v", err)
	}
	f.checkLedger(t, outs)
}

// PostgreSQL stopped and started again under load: while it is down, requests that cannot be
// decided are refused with 503 and the unavailable envelope (never 500), and both replicas
// serve again by themselves once it is back.
func TestFaultDatabaseRestartUnderLoad(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{ownCluster: true, chunkDelay: 10 * time.Millisecond})
	a := f.start("a")
	b := f.start("b")
	key, pid := a.profile(t, "1000")
	rec := &record{}
	replicas := []*replica{a, b}
	run := f.load(loadSpec{key: key, profile: pid, workers: 8, prefix: "pg", replicas: func() []*replica { return replicas }}, rec)
	waitFor(t, 60*time.Second, "answers before the outage", func() bool { return rec.count(full) >= 10 })
	f.stopDatabase()
	down := len(rec.snapshot())
	since := func(from int, pred func(seen) bool) int {
		n := 0
		for _, o := range rec.snapshot()[from:] {
			if pred(o) {
				n++
			}
		}
		return n
	}
	waitFor(t, 60*time.Second, "refusals from both replicas while the database is down", func() bool {
		return since(down, func(o seen) bool { return o.replica == "a" && o.status != 200 }) >= 3 &&
			since(down, func(o seen) bool { return o.replica == "b" && o.status != 200 }) >= 3
	})
	f.startDatabase()
	up := len(rec.snapshot())
	waitFor(t, 60*time.Second, "both replicas serving again", func() bool {
		return since(up, func(o seen) bool { return o.replica == "a" && o.full }) >= 3 &&
			since(up, func(o seen) bool { return o.replica == "b" && o.full }) >= 3
	})
	run.halt()
	outs := rec.snapshot()
	for _, o := range outs {
		if o.status != 200 && (o.status != 503 || o.code != "unavailable") {
			t.Errorf("%v: want a 200 or 503 unavailable", o)
		}
	}
	f.checkLedger(t, outs)
}

// A replica cut off from the database (frozen proxy) while another keeps spending the same
// profile: the cut-off replica stops using its lease before the database may have let it go,
// so that the two never spend more than the balance together.
func TestFaultPartitionedReplicaDoesNotOverspend(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{})
	a := f.start("a")
	b := f.start("b")
	credit := chatCost.Mul(decimal.NewFromInt(10))
	key, pid := a.profile(t, credit.String())
	rec := &record{}
	// a takes a lease and spends from it.
	for i := range 2 {
		o := a.chat(chatReq{key: key, profile: pid})
		if !o.full {
			t.Fatalf("request %d before the partition: %v", i, o)
		}
		rec.add(o)
	}
	a.proxy.Freeze()
	frozen := len(rec.snapshot())
	frozenAt := time.Now()
	// Requests on a need nothing from the database but money: their ids are the gateway's.
	onA := f.load(loadSpec{key: key, profile: pid, workers: 2, generatedIDs: true, replicas: func() []*replica { return []*replica{a} }}, rec)
	onB := f.load(loadSpec{key: key, profile: pid, workers: 2, prefix: "cut-b", replicas: func() []*replica { return []*replica{b} }, refusedPause: 100 * time.Millisecond}, rec)
	// b may serve what a's lease leaves free at once, and the rest once a's lease has gone
	// back to the pool (5 s after a's last renewal). The partition lasts until b has served
	// the whole balance, or has been refused 8 s or more into the partition (a's lease had
	// expired by then), or 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		served, refusedLate := 0, false
		for _, o := range rec.snapshot()[frozen:] {
			if o.replica == "b" && o.full {
				served++
			}
			if o.replica == "b" && o.status == 402 && o.at.Sub(frozenAt) > 8*time.Second {
				refusedLate = true
			}
		}
		if served >= 8 || refusedLate {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The partition heals the way TCP does after a long one: the old connections are gone.
	a.proxy.Cut()
	a.proxy.Thaw()
	onA.halt()
	onB.halt()
	for _, r := range []*replica{a, b} {
		if err := r.term(t, 30*time.Second); err != nil {
			t.Logf("%s exited with %v", r.name, err)
		}
	}
	outs := rec.snapshot()
	if n := len(outs) - frozen; n == 0 {
		t.Fatal("no request during the partition")
	}
	balance, _ := f.balance(t, pid)
	t.Logf("credited %s, balance %s after the partition", credit, balance)
	f.checkLedger(t, outs)
}

// SIGTERM while PostgreSQL is unreachable: the charges of answers in flight are not dropped;
// the replica keeps trying within its drain timeout and writes them once the database is back.
func TestFaultTerminateWithDatabaseDown(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{chunkDelay: 100 * time.Millisecond})
	a := f.start("a")
	key, pid := a.profile(t, "1000")
	rec := &record{}
	if o := a.chat(chatReq{key: key, profile: pid}); !o.full {
		t.Fatalf("first request: %v", o)
	}
	var wg sync.WaitGroup
	var started atomic.Int64
	const n = 8
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := chatReq{key: key, profile: pid, stream: i%2 == 0}
			if i%4 < 2 {
				q.id = fmt.Sprintf("term-%d", i)
			}
			started.Add(1)
			rec.add(a.chat(q))
		}()
	}
	// The answers take 1.2 s each; give them time to pass admission before the outage.
	waitFor(t, 30*time.Second, "requests started", func() bool { return started.Load() == n })
	time.Sleep(400 * time.Millisecond)
	a.proxy.Down()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	// The database comes back once the replica has exited or 3 s have passed: a replica that
	// gives up on its charges has exited by then (the answers end 1.2 s after they began),
	// one that keeps them waits.
	clients := make(chan struct{})
	go func() { wg.Wait(); close(clients) }()
	select {
	case <-a.exited:
	case <-time.After(3 * time.Second):
	}
	a.proxy.Up()
	select {
	case <-a.exited:
	case <-time.After(40 * time.Second):
		t.Fatal("the replica did not exit within its drain timeout")
	}
	<-clients
	outs := rec.snapshot()
	if rec.count(full) == 1 {
		t.Log("no answer in flight was delivered in full")
	}
	// The system's cleanup runs on the replicas that remain.
	f.start("b")
	f.checkLedger(t, outs)
}
