package store_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// A settlement's Bind goes out from a buffer its connection keeps (lendBuffer): a group of
// 64 charges, whose messages are some 16 KB, allocates less than three times that in all (its
// arrays among them), in both query modes, once the connection has its buffer; with
// pgproto3's own buffer, regrown from 1 KiB by appends at every commit, it was six times
// (36 against 92 KB). With its scratch used again (settleScratches), at least one of the
// rounds after the first allocates less than its messages (5 KB): a collection may empty
// the pool, and the race detector drops a quarter of what is put back.
func TestSettleReusesItsConnectionsBuffer(t *testing.T) {
	ctx := context.Background()
	url := storetest.DatabaseURL(t)
	for _, mode := range []string{"", "&default_query_exec_mode=exec"} {
		st, err := store.Open(ctx, url+"&pool_max_conns=1"+mode)
		if err != nil {
			t.Fatal(err)
		}
		p := uuid.New()
		if _, err := st.Pool.Exec(ctx, `INSERT INTO profiles (id, currency, balance) VALUES ($1, 'RUB', 1000)`, p); err != nil {
			t.Fatal(err)
		}
		key, replica := uuid.New(), uuid.New()
		cost := decimal.NewNullDecimal(decimal.RequireFromString("0.000123"))
		group := func(round int) []store.Settlement {
			b := make([]store.Settlement, 64)
			for i := range b {
				end := time.Now()
				b[i].Record = store.RequestRecord{ProfileID: p, RequestID: fmt.Sprintf("gw-settle-buffer-%d-%d", round, i), KeyID: key,
					Model: "bench-gpt", EndpointFamily: "chat", Status: "ok", Currency: "RUB", InputTokens: 20000, OutputTokens: 80,
					UsageReliable: true, Cost: cost, StartTime: end.Add(-time.Millisecond), EndTime: &end}
			}
			return b
		}
		var bind int
		best := 1 << 30
		for round := range 6 {
			b := group(round)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := st.Settle(ctx, replica, b)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("mode %q: %v", mode, err)
			}
			for i, c := range got.Charged {
				if !c.Valid || !c.Decimal.Equal(cost.Decimal) {
					t.Fatalf("mode %q: charge %d is %v, want %s", mode, i, c, cost.Decimal)
				}
			}
			bind = store.SettleMessageBytes(b)
			allocated := int(after.TotalAlloc - before.TotalAlloc)
			t.Logf("mode %q round %d: %d bytes allocated, the messages %d", mode, round, allocated, bind)
			if round > 0 && allocated > 3*bind {
				t.Errorf("mode %q: a settlement of 64 charges allocated %d bytes, its messages being %d", mode, allocated, bind)
			}
			if round > 0 {
				best = min(best, allocated)
			}
		}
		if best > bind {
			t.Errorf("mode %q: settlements of 64 charges allocated at best %d bytes, their messages being %d", mode, best, bind)
		}
		var balance decimal.Decimal
		if err := st.Pool.QueryRow(ctx, `SELECT balance FROM profiles WHERE id = $1`, p).Scan(&balance); err != nil {
			t.Fatal(err)
		}
		if want := decimal.NewFromInt(1000).Sub(cost.Decimal.Mul(decimal.NewFromInt(6 * 64))); !balance.Equal(want) {
			t.Errorf("mode %q: balance %s, want %s", mode, balance, want)
		}
		// A settlement too large for the kept buffer (a batch's backlog) settles through the
		// frontend's own buffer: the connection goes on keeping its group-sized one.
		kept := func() int {
			c, err := st.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Release()
			return store.KeptBuffer(c.Conn().PgConn())
		}
		small := kept()
		large := make([]store.Settlement, 0, 8*64)
		for round := range 8 {
			large = append(large, group(100+round)...)
		}
		if n := store.SettleMessageBytes(large); n <= store.KeptBufferMax {
			t.Fatalf("mode %q: a settlement of %d charges takes %d bytes, not more than the kept buffer's %d", mode, len(large), n, store.KeptBufferMax)
		}
		got, err := st.Settle(ctx, replica, large)
		if err != nil {
			t.Fatalf("mode %q: large settlement: %v", mode, err)
		}
		for i, c := range got.Charged {
			if !c.Valid || !c.Decimal.Equal(cost.Decimal) {
				t.Fatalf("mode %q: large settlement's charge %d is %v", mode, i, c)
			}
		}
		if after := kept(); small < bind || after != small {
			t.Errorf("mode %q: the connection kept %d bytes after groups of 64 (their messages %d), %d after a settlement of %d", mode, small, bind, after, len(large))
		}
		st.Close()
	}
}
