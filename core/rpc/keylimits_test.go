package rpc

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// Each replica enforces its share of a key's limits: concurrency over the replicas rounded
// up, rates divided exactly, never below one; the replicas are the live ones the database
// records unless GATEWAY_REPLICAS overrides them.
func TestKeyLimiterShares(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                  string
		override, live        int
		concurrent, rps       int32
		wantConcurrent, burst int
		// perTenSeconds is what a sustained overload gets through in ten seconds after the
		// burst: the share's rate, exactly.
		perTenSeconds int
	}{
		{"one replica holds the whole limit", 0, 1, 4, 0, 4, 0, 0},
		{"three replicas share ten concurrent, rounded up", 0, 3, 10, 0, 4, 0, 0},
		{"a share is never below one", 0, 8, 2, 0, 1, 0, 0},
		{"requests per second burst to the share", 0, 2, 0, 6, 0, 3, 30},
		{"three live replicas divide ten per second exactly", 0, 3, 0, 10, 0, 3, 33},
		{"no report yet counts as alone", 0, 0, 0, 10, 0, 10, 100},
		{"GATEWAY_REPLICAS overrides the live count", 2, 5, 0, 10, 0, 5, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1000, 0)
			l := &KeyLimiter{Replicas: tc.override, Live: func() int { return tc.live }, now: func() time.Time { return now }}
			k := &snapshot.Key{ID: uuid.New(), MaxConcurrent: tc.concurrent, MaxRPS: tc.rps}
			admitted := 0
			var releases []func()
			for range 20 {
				rel, _, err := l.acquire(k)
				if err != nil {
					break
				}
				admitted++
				releases = append(releases, rel)
			}
			want := max(tc.wantConcurrent, tc.burst)
			if admitted != want {
				t.Fatalf("admitted %d at once, want %d", admitted, want)
			}
			for _, r := range releases {
				r()
			}
			if tc.rps == 0 {
				if _, _, err := l.acquire(k); err != nil {
					t.Fatalf("refused after every request ended: %v", err)
				}
				return
			}
			if _, _, err := l.acquire(k); err == nil {
				t.Fatal("admitted beyond the burst without time passing")
			}
			// Ten seconds of a request every 10 ms.
			got := 0
			for range 1000 {
				now = now.Add(10 * time.Millisecond)
				if rel, _, err := l.acquire(k); err == nil {
					got++
					rel()
				}
			}
			if got != tc.perTenSeconds {
				t.Errorf("admitted %d in ten seconds of overload, want %d", got, tc.perTenSeconds)
			}
		})
	}
}

// The live count is read at every request: a replica joining halves the share at once.
func TestKeyLimiterFollowsLiveReplicas(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	live := 1
	l := &KeyLimiter{Live: func() int { return live }, now: func() time.Time { return now }}
	k := &snapshot.Key{ID: uuid.New(), MaxRPS: 8}
	rate := func() int {
		got := 0
		for range 500 { // five seconds
			now = now.Add(10 * time.Millisecond)
			if rel, _, err := l.acquire(k); err == nil {
				got++
				rel()
			}
		}
		return got
	}
	rate() // past the first burst
	if got := rate(); got != 40 {
		t.Fatalf("alone: %d in five seconds, want 40", got)
	}
	live = 2
	rate() // the bucket drains to the smaller share
	if got := rate(); got != 20 {
		t.Fatalf("one of two: %d in five seconds, want 20", got)
	}
}

// The -requests headers: the key's limit, what this replica has left, when its share is whole
// again; on a refusal too. A key without a request rate has none.
func TestKeyLimiterRequestHeaders(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	l := &KeyLimiter{Live: func() int { return 1 }, now: func() time.Time { return now }}
	k := &snapshot.Key{ID: uuid.New(), MaxRPS: 2}
	want := []struct {
		remaining, reset string
		refused          bool
	}{{"1", "500ms", false}, {"0", "1s", false}, {"0", "1s", true}}
	for i, w := range want {
		_, md, err := l.acquire(k)
		if (err != nil) != w.refused {
			t.Fatalf("request %d: err %v, want refused %v", i, err, w.refused)
		}
		if got := mdValue(md, callmd.RateLimitLimitRequests); got != "2" {
			t.Errorf("request %d: limit %q", i, got)
		}
		if got := mdValue(md, callmd.RateLimitRemainingRequests); got != w.remaining {
			t.Errorf("request %d: remaining %q, want %q", i, got, w.remaining)
		}
		if got := mdValue(md, callmd.RateLimitResetRequests); got != w.reset {
			t.Errorf("request %d: reset %q, want %q", i, got, w.reset)
		}
	}
	if _, md, _ := l.acquire(&snapshot.Key{ID: uuid.New(), MaxConcurrent: 3}); md != nil {
		t.Errorf("a key with only a concurrency limit got headers %v", md)
	}
}

func mdValue(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

// max_tokens_per_minute: admission counts the worst case, settlement corrects it to the usage;
// a request that does not fit is refused until enough of the rolling minute has passed.
func TestKeyLimiterTokensPerMinute(t *testing.T) {
	t.Parallel()
	now := time.Unix(6000, 0)
	l := &KeyLimiter{Live: func() int { return 2 }, now: func() time.Time { return now }}
	k := &snapshot.Key{ID: uuid.New(), MaxTPM: 2000} // a share of 1000 on each of two replicas

	a, md, err := l.countTokens(k, 600)
	if err != nil {
		t.Fatal(err)
	}
	if got := mdValue(md, callmd.RateLimitRemainingTokens); got != "400" || mdValue(md, callmd.RateLimitLimitTokens) != "2000" ||
		mdValue(md, callmd.RateLimitResetTokens) != "1m0s" {
		t.Errorf("headers after 600 of 1000: %v", md)
	}
	// The worst case of the next does not fit until the first settles below its hold.
	if _, md, err := l.countTokens(k, 500); !isRateLimited(err) || mdValue(md, callmd.RateLimitRemainingTokens) != "400" {
		t.Fatalf("500 more of 400 left: %v %v", err, md)
	}
	now = now.Add(10 * time.Second)
	a.settle(100)
	b, md, err := l.countTokens(k, 500)
	if err != nil {
		t.Fatalf("after the first settled at 100: %v", err)
	}
	if got := mdValue(md, callmd.RateLimitRemainingTokens); got != "400" {
		t.Errorf("remaining after 100 + 500: %q", got)
	}
	// Usage beyond the worst case counts in full.
	b.settle(800)
	_, md, err = l.countTokens(k, 200)
	if !isRateLimited(err) {
		t.Fatalf("200 more with 900 used: %v", err)
	}
	var ae *apierror.Error
	if errors.As(err, &ae); ae.RetryAfter != 50 {
		t.Errorf("retry-after %d, want 50 (the first second's 100 leave the minute)", ae.RetryAfter)
	}
	if got := mdValue(md, callmd.RateLimitResetTokens); got != "1m0s" {
		t.Errorf("reset %q, want 1m0s (the newest count leaves)", got)
	}
	now = now.Add(50 * time.Second)
	if _, _, err := l.countTokens(k, 200); err != nil {
		t.Fatalf("after the oldest second left the minute: %v", err)
	}
	// A request larger than the whole share waits for an empty minute, then passes alone.
	now = now.Add(61 * time.Second)
	if _, _, err := l.countTokens(k, 5000); err != nil {
		t.Fatalf("a request above the share into an empty minute: %v", err)
	}
	if _, _, err := l.countTokens(k, 1); !isRateLimited(err) {
		t.Fatalf("after the large request took the share: %v", err)
	}
	// Without a token limit nothing is counted.
	if c, md, err := l.countTokens(&snapshot.Key{ID: uuid.New(), MaxRPS: 1}, 1e9); c != nil || md != nil || err != nil {
		t.Errorf("no token limit: %v %v %v", c, md, err)
	}
}

func isRateLimited(err error) bool {
	var ae *apierror.Error
	return errors.As(err, &ae) && ae.Code == apierror.RateLimited
}
