package rpc

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/snapshot"
)

// Each replica enforces its share of a key's limits: the limit over the replicas, rounded up,
// at least one; tokens come back at the share's rate.
func TestKeyLimiterShares(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                  string
		replicas              int
		concurrent, rps       int32
		wantConcurrent, burst int
	}{
		{"one replica holds the whole limit", 1, 4, 0, 4, 0},
		{"three replicas share ten, rounded up", 3, 10, 0, 4, 0},
		{"a share is never below one", 8, 2, 0, 1, 0},
		{"requests per second burst to the share", 2, 0, 6, 0, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1000, 0)
			l := &KeyLimiter{Replicas: tc.replicas, now: func() time.Time { return now }}
			k := &snapshot.Key{ID: uuid.New(), MaxConcurrent: tc.concurrent, MaxRPS: tc.rps}
			admitted := 0
			var releases []func()
			for range 20 {
				rel, err := l.acquire(k)
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
			if tc.rps > 0 {
				if _, err := l.acquire(k); err == nil {
					t.Fatal("admitted beyond the burst without time passing")
				}
				now = now.Add(time.Second / time.Duration(tc.burst)) // one token's worth
				if _, err := l.acquire(k); err != nil {
					t.Fatalf("refused after a token came back: %v", err)
				}
			} else if _, err := l.acquire(k); err != nil {
				t.Fatalf("refused after every request ended: %v", err)
			}
		})
	}
}
