package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
)

// leaseRow is a replica's lease on a profile as the database has it, read with the
// database's own clock.
type leaseRow struct {
	present bool
	expires time.Time
	now     time.Time
}

func (f *faultEnv) lease(t *testing.T, pid string) leaseRow {
	t.Helper()
	var r leaseRow
	err := f.pool.QueryRow(context.Background(), `
		SELECT l.expires_at, clock_timestamp() FROM balance_leases l
		WHERE l.profile_id = $1::uuid AND l.amount > 0`, pid).Scan(&r.expires, &r.now)
	switch {
	case err == pgx.ErrNoRows:
		if err := f.pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&r.now); err != nil {
			t.Fatal(err)
		}
		return r
	case err != nil:
		t.Fatal(err)
	}
	r.present = true
	return r
}

// The lease timings of the contract at their real values (issue 21): a replica's lease lasts
// 5 s from its last renewal, so a crashed replica's share of a balance comes back 5 s after
// its last renewal and not before; a live replica returns a lease it has not used for 2 s
// itself, before it would expire. Each is seen from another replica, which is refused while
// the lease stands and served once it has gone.
func TestLeaseTimingsAtTheirRealValues(t *testing.T) {
	t.Parallel()
	f := newFaultEnv(t, faultOptions{})
	a := f.start("a")
	b := f.start("b")

	// 0.1 of credit; a request holds 0.012 and its replica leases eight holds: 0.096 of the
	// 0.1, leaving 0.004 to the other replica, less than one hold.
	t.Run("a crashed replica's lease expires 5 s after its last renewal", func(t *testing.T) {
		key, pid := a.profile(t, "0.1")
		// A stalled stream keeps a's hold (and so its lease, renewed every second) in use.
		go a.chat(chatReq{key: key, profile: pid, stream: true, prompt: "hi #sim:stall=60s"})
		var ttlLow, ttlHigh time.Duration // bounds of the lease's lifetime from its last write
		prev := f.lease(t, pid)
		renewals := 0
		gatewaytest.WaitFor(t, 30*time.Second, "two writes of a's lease", func() bool {
			cur := f.lease(t, pid)
			if cur.present && (!prev.present || !cur.expires.Equal(prev.expires)) {
				// Written after the previous read began and before this one.
				ttlLow, ttlHigh = cur.expires.Sub(cur.now), cur.expires.Sub(prev.now)
				renewals++
			}
			prev = cur
			return renewals >= 2
		})
		const ttl = 5 * time.Second
		// The writer's now() is its transaction's start, a few milliseconds before it wrote.
		if ttlLow > ttl || ttlHigh < ttl-250*time.Millisecond {
			t.Errorf("a's lease lasts between %v and %v from its write, want 5 s", ttlLow, ttlHigh)
		}
		if o := b.chat(chatReq{key: key, profile: pid, maxTokens: 12}); o.status != 402 || o.code != "insufficient_balance" {
			t.Fatalf("b while a's lease stands: %v", o)
		}
		a.kill()
		row := f.lease(t, pid)
		if !row.present {
			t.Fatal("a's lease is gone at once after kill -9: nothing returned it")
		}
		if left := row.expires.Sub(row.now); left <= 0 || left > ttl {
			t.Fatalf("a's lease expires %v after the kill, want within 5 s", left)
		}
		for {
			o := b.chat(chatReq{key: key, profile: pid, maxTokens: 12})
			after := f.lease(t, pid).now
			if o.status == 200 && o.full {
				if after.Before(row.expires) {
					t.Fatalf("b was served at %v, before a's lease expired at %v", after, row.expires)
				}
				break
			}
			if o.status != 402 {
				t.Fatalf("b: %v", o)
			}
			if after.After(row.expires.Add(15 * time.Second)) {
				t.Fatalf("b still refused 15 s after a's lease expired: %v", o)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("a live replica returns a lease idle for 2 s", func(t *testing.T) {
		key, pid := b.profile(t, "0.1")
		c := f.start("c")
		sent := f.lease(t, pid).now
		if o := b.chat(chatReq{key: key, profile: pid, maxTokens: 12}); o.status != 200 || !o.full {
			t.Fatalf("b: %v", o)
		}
		if o := c.chat(chatReq{key: key, profile: pid, maxTokens: 12}); o.status != 402 {
			t.Fatalf("c while b's lease stands: %v", o)
		}
		var last leaseRow
		var gone leaseRow
		gatewaytest.WaitFor(t, 30*time.Second, "b's lease returned", func() bool {
			cur := f.lease(t, pid)
			if cur.present {
				last = cur
				return false
			}
			gone = cur
			return true
		})
		if !last.present {
			t.Fatal("b's lease was never seen")
		}
		// Returned, not expired: gone while its row was still valid, and not before 2 s
		// without use (its last use was no earlier than the request's start).
		if !gone.now.Before(last.expires.Add(250 * time.Millisecond)) {
			t.Errorf("b's lease went at %v, after it expired at %v: not returned", gone.now, last.expires)
		}
		if idle := gone.now.Sub(sent); idle < 2*time.Second {
			t.Errorf("b returned its lease %v after the request began, before 2 s idle", idle)
		}
		if o := c.chat(chatReq{key: key, profile: pid, maxTokens: 12}); o.status != 200 || !o.full {
			t.Fatalf("c after b returned its lease: %v", o)
		}
		if bal, n := f.balance(t, pid); n != 2 || !bal.Equal(decimal.RequireFromString("0.076")) {
			t.Errorf("balance %s after %d charges, want 0.076 after 2", bal, n)
		}
	})
}
