package rpc_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// A key limited to N requests per second, its load spread evenly over two and then three
// `gateway serve` processes on one database, none configured with GATEWAY_REPLICAS: each
// replica's share follows the live replicas the database records, so the key gets N per
// second in total (within 10 %), not N per replica; a replica joining or killed changes the
// shares within 10 s.
func TestKeyRateLimitHoldsAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three gateway processes")
	}
	t.Parallel()
	const limit = 20
	db := storetest.DatabaseURL(t)
	a := gatewaytest.StartGen(t, gatewaytest.Options{Name: "a", DatabaseURL: db}).Gateway
	b := gatewaytest.Start(t, gatewaytest.Options{Name: "b", DatabaseURL: db})
	pool := a.Pool()
	_, pid := a.NewProfile("", "1000")
	k := a.Admin("POST", "/admin/v1/profiles/"+pid+"/keys",
		fmt.Sprintf(`{"name":"rps","allowed_endpoints":["*"],"allowed_models":["*"],"max_requests_per_second":%d}`, limit))
	key := k["secret"].(string)
	auth := map[string]string{"Authorization": "Bearer " + key}
	known := func(rs ...*gatewaytest.Gateway) {
		for _, r := range rs {
			gatewaytest.WaitFor(t, 30*time.Second, "the key on "+r.Name, func() bool {
				status, _, _, _ := r.Raw("GET", "/v1/balance", auth, "")
				return status == 200
			})
		}
	}
	known(a, b)
	live := func() int {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM replicas WHERE seen_at > now() - interval '5 seconds'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// measure sends the key's requests round robin over rs, far above the limit, for a
	// warm-up (which empties the burst of each replica's bucket) and then window; it returns
	// the accepted requests per second of the window over the limit.
	measure := func(what string, warm, window time.Duration, rs ...*gatewaytest.Gateway) float64 {
		t.Helper()
		start := time.Now()
		from, to := start.Add(warm), start.Add(warm+window)
		var mu sync.Mutex
		accepted, refused := 0, 0
		var wg sync.WaitGroup
		for w := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; time.Now().Before(to); i++ {
					sent := time.Now()
					status, _, raw, err := rs[i%len(rs)].Raw("POST", "/v1/chat/completions", auth, `{"model":"m-money","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`)
					if err != nil || (status != 200 && status != 429) {
						t.Errorf("%s: %d %s %v", what, status, raw, err)
						return
					}
					if sent.After(from) && sent.Before(to) {
						mu.Lock()
						if status == 200 {
							accepted++
						} else {
							refused++
						}
						mu.Unlock()
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		ratio := float64(accepted) / window.Seconds() / limit
		t.Logf("%s: %d accepted, %d refused in %v: %.1f per second against a limit of %d (ratio %.3f)",
			what, accepted, refused, window, float64(accepted)/window.Seconds(), limit, ratio)
		if refused < accepted/2 {
			t.Errorf("%s: the load (%d refused) was not far above the limit", what, refused)
		}
		return ratio
	}
	check := func(what string, ratio float64) {
		if math.Abs(ratio-1) > 0.10 {
			t.Errorf("%s: accepted %.3f of the limit, want within 10 %%", what, ratio)
		}
	}

	gatewaytest.WaitFor(t, 10*time.Second, "two live replicas", func() bool { return live() == 2 })
	check("two replicas", measure("two replicas", 3*time.Second, 10*time.Second, a, b))

	// A third replica: the shares follow within 10 s of its start (warm-up included).
	c := gatewaytest.Start(t, gatewaytest.Options{Name: "c", DatabaseURL: db})
	known(c)
	check("three replicas", measure("three replicas", 4*time.Second, 10*time.Second, a, b, c))

	// Killed without a word: the others notice within 10 s (its last report grows older than
	// five seconds) and take over its share.
	c.Kill()
	time.Sleep(4 * time.Second)
	check("two replicas after the third was killed", measure("two replicas after the third was killed", 4*time.Second, 10*time.Second, a, b))
}
