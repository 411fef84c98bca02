package h1

import (
	"net/http"
	"testing"
	"time"
)

// TestHTTPDateIsTheCurrentSecond: the Date header, cached for a second, names the wall
// clock's second at every call, across second boundaries (a cache kept past its second
// would name the one before).
func TestHTTPDateIsTheCurrentSecond(t *testing.T) {
	seen := map[string]bool{}
	deadline := time.Now().Add(2200 * time.Millisecond)
	for time.Now().Before(deadline) {
		before := time.Now().UTC().Format(http.TimeFormat)
		got := httpDate()
		after := time.Now().UTC().Format(http.TimeFormat)
		if got != before && got != after {
			t.Fatalf("httpDate %q, the wall clock's second around it %q .. %q", got, before, after)
		}
		seen[got] = true
		time.Sleep(time.Millisecond)
	}
	if len(seen) < 2 {
		t.Fatalf("2.2 s of calls named %d seconds, want the cache renewed: %v", len(seen), seen)
	}
}
