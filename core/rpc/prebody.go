package rpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
)

// smallestHold is the least any request of the family can hold on the model (nil: on any
// model the key may use there): the input estimate of an empty body and no output at the
// cheapest price rule that could apply. Every priced RPC holds at least that much, so a
// profile that cannot pay it would be refused after the body anyway. Zero when some model
// is free or unpriced (pricing_unavailable is decided with the body). The token-counting
// families cost nothing but need a positive available balance (contract: nothing for
// free; otherwise a profile with no money holds upstream calls and body memory at will):
// countFloor, the smallest amount a balance can hold.
func smallestHold(snap *snapshot.Snapshot, k *snapshot.Key, family string, m *snapshot.Model) decimal.Decimal {
	if strings.HasSuffix(family, "count_tokens") {
		return countFloor
	}
	models := []*snapshot.Model{m}
	if m == nil {
		models = snap.VisibleModels(k, family)
	}
	var least decimal.Decimal
	for i, m := range models {
		h, priced := modelSmallestHold(m, family)
		if !priced {
			return decimal.Zero
		}
		if i == 0 || h.LessThan(least) {
			least = h
		}
	}
	return least
}

// countFloor is the least positive amount a balance holds (numeric(38,9)): a balance covers
// it exactly when it is positive.
var countFloor = decimal.New(1, -9)

// modelSmallestHold is the smaller of the holds at the price rule a generation finds and the
// one the other routes find (they may differ when a rule lacks an output price).
func modelSmallestHold(m *snapshot.Model, family string) (decimal.Decimal, bool) {
	var least decimal.Decimal
	priced := false
	for _, needsOutput := range []bool{false, true} {
		p, err := billing.Find(m.Prices, family, needsOutput)
		if err != nil {
			continue
		}
		h := p.WorstCase(billing.InputEstimate(0), 0)
		if !priced || h.LessThan(least) {
			least = h
		}
		priced = true
	}
	return least, priced
}

// holdMemo keeps the smallest holds of one snapshot: they depend on nothing else (the
// catalogue's models, prices and keys), and working them out takes decimal products on
// every request otherwise. A new snapshot starts a new memo, so a catalogue change is seen
// by the first request that uses it.
type holdMemo struct {
	snap  *snapshot.Snapshot
	mu    sync.RWMutex
	holds map[holdMemoKey]decimal.Decimal
}

// holdMemoKey is what smallestHold reads: the key only when no model is named (the key's
// visible models then make the route).
type holdMemoKey struct {
	k      *snapshot.Key
	m      *snapshot.Model
	family string
}

// holdMemoMax bounds a memo; past it holds are worked out per request again. Models and
// families are few; named-model entries do not grow with the keys.
const holdMemoMax = 1 << 14

// memoHolds is the CoreServer's memo of smallestHold for the current snapshot.
type memoHolds struct{ cur atomic.Pointer[holdMemo] }

func (c *memoHolds) smallest(snap *snapshot.Snapshot, k *snapshot.Key, family string, m *snapshot.Model) decimal.Decimal {
	memo := c.cur.Load()
	if memo == nil || memo.snap != snap {
		fresh := &holdMemo{snap: snap, holds: map[holdMemoKey]decimal.Decimal{}}
		if c.cur.CompareAndSwap(memo, fresh) {
			memo = fresh
		} else if memo = c.cur.Load(); memo.snap != snap {
			// Another snapshot is being memoised at the same moment: do without.
			return smallestHold(snap, k, family, m)
		}
	}
	key := holdMemoKey{m: m, family: family}
	if m == nil {
		key.k = k
	}
	memo.mu.RLock()
	h, ok := memo.holds[key]
	memo.mu.RUnlock()
	if ok {
		return h
	}
	h = smallestHold(snap, k, family, m)
	memo.mu.Lock()
	if len(memo.holds) < holdMemoMax {
		memo.holds[key] = h
	}
	memo.mu.Unlock()
	return h
}

// checkBalance refuses, before the body is read, a key whose profile cannot pay the smallest
// hold of the route. When the ledger cannot decide (the database is away, the client left)
// the request goes on: its own hold then answers.
func (s *CoreServer) checkBalance(ctx context.Context, snap *snapshot.Snapshot, k *snapshot.Key, family string, m *snapshot.Model) error {
	least := s.holds.smallest(snap, k, family, m)
	if !least.IsPositive() {
		return nil
	}
	if err := s.Deps.Ledger.Covers(ctx, k.ProfileID, least); errors.Is(err, billing.ErrInsufficient) {
		if strings.HasSuffix(family, "count_tokens") {
			return apierror.New(apierror.InsufficientBalance, "token counting is free but needs a positive available balance")
		}
		return apierror.New(apierror.InsufficientBalance, "the balance cannot cover a request on this route (at least %s %s)", least, snap.Currency)
	}
	if k.Budget != nil {
		// The key's budget likewise: a free count needs something left of it.
		if err := s.Deps.Ledger.CoversBudget(ctx, keyBudget(k), time.Now(), least); errors.Is(err, billing.ErrBudgetExceeded) {
			return budgetExceeded(err, least, snap.Currency)
		}
	}
	return nil
}
