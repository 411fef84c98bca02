package snapshot

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"modelgateway/core/keys"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// logRec keeps the messages logged through it.
type logRec struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRec) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRec) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logRec) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRec) WithGroup(string) slog.Handler      { return l }

// count is how many messages contain s.
func (l *logRec) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// eventually waits up to 20 s (generous on a loaded machine) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runHolder starts Run and stops it at cleanup; Run must return once its context ends.
func runHolder(t *testing.T, h *Holder, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx, url) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// A change made by another process reaches the snapshot through NOTIFY alone: the periodic
// reload is an hour away and nobody calls Reload. A healthy listener never reconnects.
func TestChangesArriveByNotification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.DatabaseURL(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	rec := &logRec{}
	h.Interval, h.Log = time.Hour, slog.New(rec)
	runHolder(t, h, url)

	p, err := st.CreateProfile(ctx, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"first", "second"} {
		hash := keys.Hash(secret)
		if _, err := st.CreateKey(ctx, &store.Key{ProfileID: p.ID, Prefix: "x", SecretHash: hash[:], AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the key "+secret+" to reach the snapshot", func() bool {
			_, apiErr := h.Current().Authenticate(secret)
			return apiErr == nil
		})
	}
	if n := rec.count("lost its connection"); n != 0 {
		t.Errorf("a healthy listener reconnected %d times", n)
	}
}

// A listener that cannot reach the database retries with a doubling pause (100, 200, 400 ms
// ...): four failures take at least 700 ms, never a busy loop.
func TestListenerBacksOff(t *testing.T) {
	t.Parallel()
	_, h := openHolder(t)
	rec := &logRec{}
	h.Interval, h.Log = time.Hour, slog.New(rec)
	start := time.Now()
	runHolder(t, h, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	eventually(t, "four failed connections", func() bool { return rec.count("lost its connection") >= 4 })
	if took := time.Since(start); took < 700*time.Millisecond {
		t.Errorf("four failed connections in %s: the listener does not back off", took)
	}
}

// A reload that fails is logged and the snapshot in use stays.
func TestFailedReloadIsLoggedAndTheOldSnapshotStays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.DatabaseURL(t)
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	before := h.Current()
	st.Close() // every reload from now on fails
	rec := &logRec{}
	h.Interval, h.Log = 10*time.Millisecond, slog.New(rec)
	runHolder(t, h, url)
	eventually(t, "a failed reload to be logged", func() bool { return rec.count("snapshot reload failed") > 0 })
	if h.Current() != before {
		t.Error("a failed reload replaced the snapshot")
	}
}
