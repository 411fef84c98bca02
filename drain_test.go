package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store/storetest"
)

// waitHeld waits until something of the key's balance is reserved: core has admitted a
// request and holds its worst case. Bounded generously.
func waitHeld(t *testing.T, g *genEnv, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, a := g.balanceOf(t, key); a.LessThan(b) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the request was never admitted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An upload half sent when the replica starts shutting down is drained: the client finishes
// sending, gets its answer, and it is charged before Shutdown returns.
func TestShutdownDrainsAnUploadInFlight(t *testing.T) {
	a, db := startMediaOn(t)
	b, shutdown := startOwned(t, db)
	b.key = a.key
	body, ct := gatewaytest.FormOfSize(t, 400_000, true)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", b.base+"/v1/audio/transcriptions", pr)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+b.key)
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, raw, err}
	}()
	if _, err := pw.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, a, a.key) // the model came first: core has admitted the upload

	shut := make(chan error, 1)
	go func() { shut <- shutdown(10 * time.Second) }()
	time.Sleep(100 * time.Millisecond) // let the shutdown begin; the drain must wait for us anyway
	if _, err := pw.Write(body[len(body)/2:]); err != nil {
		t.Fatalf("the rest of the upload: %v", err)
	}
	pw.Close()
	ans := <-answered
	if ans.err != nil || ans.status != 200 || !strings.Contains(string(ans.body), `"text"`) {
		t.Fatalf("upload across the shutdown: %d %s %v", ans.status, ans.body, ans.err)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if bal, _, n := a.ledgerOf(t, a.profileID); n != 1 || !bal.Equal(decimal.RequireFromString("999.75")) {
		t.Errorf("after shutdown: %d charges, balance %s; want the upload's 0.25", n, bal)
	}
}

// A generation that would outlast the drain bound holds the shutdown for the bound, no
// longer: Shutdown returns, the client's stream ends, and the cut answer is not charged.
func TestShutdownStopsWaitingAtTheDrainBound(t *testing.T) {
	db := startGenOnDB(t)
	a := db.g
	key, pid := a.newProfile(t, "drain", "1")
	b, shutdown := startOwned(t, db.url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := mustRequest(t, b.base+"/v1/chat/completions", key, `{"model":"m-money","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hi #sim:stall=60s"}]}`)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first chunk: %d %v", resp.StatusCode, err)
	}
	const drain = 2 * time.Second
	start := time.Now()
	err = shutdown(drain)
	took := time.Since(start)
	if took < drain-100*time.Millisecond {
		t.Errorf("shutdown returned after %s: it did not wait for the request in flight (bound %s)", took, drain)
	}
	// The bound plus the final flush, generously: far below the 60 s the upstream would take.
	if took > drain+15*time.Second {
		t.Errorf("shutdown took %s with a drain bound of %s", took, drain)
	}
	_ = err // a drain that ran out is reported; what matters is that it ended
	rest, _ := io.ReadAll(rd)
	if strings.Contains(string(rest), "[DONE]") {
		t.Errorf("a stream cut by the shutdown ended as complete: %q", rest)
	}
	// Nothing charged for the cut answer: a delivered one on the surviving replica settles as
	// the only charge.
	if status, _, raw := a.postAs(t, key, "/v1/chat/completions", nil, moneyBody); status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	if bal := a.settled(t, pid, 1); !bal.Equal(decimal.RequireFromString("0.988")) {
		t.Errorf("balance %s", bal)
	}
}

type genDB struct {
	g   *genEnv
	url string
}

// startGenOnDB is startGen that also returns its database, for a second replica.
func startGenOnDB(t *testing.T) genDB {
	t.Helper()
	url := storetest.DatabaseURL(t)
	return genDB{g: startGenOn(t, url, true), url: url}
}
