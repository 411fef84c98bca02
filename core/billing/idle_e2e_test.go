package billing_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/pgcluster"
	"modelgateway/core/store/storetest"
)

// idleStatementsBound is the most statements per second an idle replica may send its database
// (issue 35: PostgreSQL's idle cost under 1 % of a core). What an idle replica sends, measured
// over 30 s: its liveness report (1 a second, for the live-replica count of the keys' limits),
// the batch runner's look for work (1 a second once idle), the sweep of what dead replicas
// left and the batches' expiry (each one statement every 5 s), the status recorder (a few a
// minute) and the catalogue's safety-net reload (a dozen once a minute, so up to 0.6 a second
// more in a 20 s window): about 2.8 a second, where it was 10.9 (the runner's claims in
// transactions every 500 ms, the sweep as four statements, the reload every 15 s).
const idleStatementsBound = 4.0

// An idle replica, after serving a charged request, sends its database at most
// idleStatementsBound statements a second: its leases are given back and no timer works when
// nothing changed. The same replica under a request sends more (the counter sees it).
func TestIdleReplicaStatementsPerSecond(t *testing.T) {
	counter := gatewaytest.CountStatements(t, storetest.DatabaseURL(t))
	g := gatewaytest.StartGen(t, gatewaytest.Options{DatabaseURL: counter.URL})

	// Busy first: a charged request is durable before its answer ends, so the counter sees
	// the settlement (the counter counts what it should).
	before := counter.Total()
	if status, _, raw := g.Post("/v1/chat/completions", nil, gatewaytest.MoneyBody); status != 200 {
		t.Fatalf("chat: %d %s", status, raw)
	}
	if counter.Total() == before {
		t.Fatal("a charged request sent no statement through the counter")
	}

	// Idle: the lease goes back after DefaultIdle and a renewal period; then count.
	time.Sleep(billingQuiet)
	window := idleWindow(t)
	texts, n0 := counter.Texts(), counter.Total()
	cpu0, cpuOK := pgcluster.CPUTime()
	time.Sleep(window)
	n := counter.Total() - n0
	cpu1, _ := pgcluster.CPUTime()
	perSecond := float64(n) / window.Seconds()
	cpu := "not measured (PostgreSQL is not this process's child)"
	if cpuOK {
		cpu = fmt.Sprintf("%.3f %% of a core", 100*(cpu1-cpu0).Seconds()/window.Seconds())
	}
	t.Logf("idle replica: %d statements in %v (%.2f a second), PostgreSQL CPU %s:\n%s", n, window, perSecond, cpu, counter.Diff(texts))
	if perSecond > idleStatementsBound {
		t.Errorf("an idle replica sent %.2f statements a second, want at most %.1f", perSecond, idleStatementsBound)
	}
}

// billingQuiet outlasts a lease's idle time and the renewal that gives it back.
const billingQuiet = 5 * time.Second

// idleWindow is 20 s, or GATEWAY_TEST_IDLE_WINDOW seconds for a longer measurement.
func idleWindow(t *testing.T) time.Duration {
	if s := strings.TrimSpace(os.Getenv("GATEWAY_TEST_IDLE_WINDOW")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("GATEWAY_TEST_IDLE_WINDOW: %v", err)
		}
		return time.Duration(n) * time.Second
	}
	return 20 * time.Second
}
