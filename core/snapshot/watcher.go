package snapshot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store"
)

// Channel is the NOTIFY channel the migrations' triggers signal on.
const Channel = "gateway_snapshot"

// DefaultInterval is the safety-net reload's interval. A notification is lost only while the
// listener is not connected, and a listener that connects again reloads at once; the periodic
// reload (the whole catalogue, keys included: a dozen statements) is for what slips past that,
// and is rarer than it was (15 s) because it is most of what an idle replica costs PostgreSQL.
// It stays well inside GatewaySnapshotStale's 2 minutes (README).
const DefaultInterval = time.Minute

// Holder keeps the current snapshot and reloads it when PostgreSQL says something changed,
// with a periodic full reload as the safety net for a lost notification.
type Holder struct {
	store *store.Store
	cur   atomic.Pointer[Snapshot]
	// reloading serialises load-and-swap: without it a reload that read the database before a
	// change could finish after one that read it afterwards and put the older snapshot back.
	reloading sync.Mutex
	reloadCh  chan struct{}
	// changed is closed, and replaced, whenever a new snapshot is stored (Changed).
	changedMu sync.Mutex
	changed   chan struct{}
	// Interval of the safety-net reload.
	Interval time.Duration
	Log      *slog.Logger
}

// NewHolder loads the first snapshot.
func NewHolder(ctx context.Context, st *store.Store) (*Holder, error) {
	h := &Holder{store: st, reloadCh: make(chan struct{}, 1), Interval: DefaultInterval, Log: slog.Default()}
	if err := h.Reload(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// Current is the snapshot to check a request against.
func (h *Holder) Current() *Snapshot { return h.cur.Load() }

// Reload rebuilds the snapshot now; admin calls use it so that their own replica is current
// the moment they answer.
func (h *Holder) Reload(ctx context.Context) error {
	h.reloading.Lock()
	defer h.reloading.Unlock()
	d, err := h.store.LoadCatalog(ctx)
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	h.cur.Store(Build(d, time.Now()))
	h.changedMu.Lock()
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	h.changedMu.Unlock()
	return nil
}

// Changed returns a channel that is closed when the next snapshot replaces the current one:
// long-lived sessions re-check their key on it instead of polling.
func (h *Holder) Changed() <-chan struct{} {
	h.changedMu.Lock()
	defer h.changedMu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// Run listens for change notifications until ctx ends. Notifications are coalesced: a burst
// of changes costs one reload.
func (h *Holder) Run(ctx context.Context, databaseURL string) {
	listening := make(chan struct{})
	go func() { defer close(listening); h.listen(ctx, databaseURL) }()
	defer func() { <-listening }() // no goroutine outlives Run
	tick := time.NewTicker(h.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.reloadCh:
		}
		if err := h.Reload(ctx); err != nil && ctx.Err() == nil {
			h.Log.Error("snapshot reload failed", "err", err)
		}
	}
}

func (h *Holder) poke() {
	select {
	case h.reloadCh <- struct{}{}:
	default:
	}
}

func (h *Holder) listen(ctx context.Context, databaseURL string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := h.listenOnce(ctx, databaseURL)
		if ctx.Err() != nil {
			return
		}
		h.Log.Warn("snapshot listener lost its connection", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (h *Holder) listenOnce(ctx context.Context, databaseURL string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Changes made while we were not listening would otherwise wait for the periodic reload.
	h.poke()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		h.poke()
	}
}
