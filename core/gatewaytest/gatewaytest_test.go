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
	if g.GRPCAddr == "" || g.HTTPAddr == "" {
		t.Fatalf("addresses %q %q", g.HTTPAddr, g.GRPCAddr)
	}
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
