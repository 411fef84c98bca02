package gatewaytest

import (
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// A replica starts on its own database, answers on the addresses it logged, and is gone
// after Kill; the binary is built once however many replicas start.
func TestStartServesAndKillEnds(t *testing.T) {
	start := time.Now()
	bin := Binary(t)
	t.Logf("built %s in %v", bin, time.Since(start))
	start = time.Now()
	g := Start(t, Options{})
	t.Logf("first replica serving in %v (PostgreSQL, migrations, start-up)", time.Since(start))
	if status, _, body := g.Do("GET", "/healthz", nil, ""); status != 200 || body["status"] != "ok" {
		t.Fatalf("healthz: %d %v", status, body)
	}
	if g.GRPCAddr == "" || g.HTTPAddr == "" || g.MetricsAddr != "" {
		t.Fatalf("addresses %q %q, metrics %q (off unless asked for)", g.HTTPAddr, g.GRPCAddr, g.MetricsAddr)
	}
	// /metrics asked for on a port of its own choosing: the address it logged answers.
	m := Start(t, Options{Name: "metrics", DatabaseURL: g.DatabaseURL, Env: []string{"GATEWAY_METRICS_ADDR=127.0.0.1:0"}})
	if m.MetricsAddr == "" {
		t.Fatal("no /metrics address read from the start-up line")
	}
	ScrapeUntil(t, m.MetricsAddr, "gateway_")
	if Binary(t) != bin {
		t.Fatal("the binary was built twice")
	}
	g.Kill()
	if g.Alive() {
		t.Fatal("alive after Kill")
	}
	if _, _, _, err := g.Raw("GET", "/healthz", nil, ""); err == nil {
		t.Fatal("a killed replica still answers")
	}
}
