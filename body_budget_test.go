package main

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"modelgateway/core/wire/apierror"
	"modelgateway/front"
	"modelgateway/front/relay"
)

// slowUpload starts an upload that declares length bytes, sends `sent` of them and stalls.
func slowUpload(t *testing.T, g *genEnv, path, key string, length, sent int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := rawRequest(t, g.g.HTTPAddr, postHead(path, key, int64(length), "Anthropic-Version: 2023-06-01\r\n"))
	if _, err := c.Write(bytes.Repeat([]byte(" "), sent)); err != nil {
		t.Fatal(err)
	}
	return c, br
}

// waitBudget waits until f reports true of the replica's budget.
func waitBudget(t *testing.T, b *relay.Budget, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !f(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: replica budget used %d", what, b.Used())
		}
	}
}

// Issue 30, the shared body budget: a profile held a whole replica's budget with four slow
// uploads to a counting route (declared 32 MiB each, sent at 10 KiB/s), and every other
// profile's body got 429 for the ~55 minutes they lasted, because a body was charged its
// declared length at once. Scaled down (a 4 MiB replica budget, four uploads declaring 1 MiB
// each over two keys): the uploads are in flight and charged what they sent, far below what
// they declared, and another profile's requests are served meanwhile.
func TestSlowUploadsOfOneProfileCannotStarveAnother(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(c *Config) {
		c.Limits = front.Limits{BodyBudget: 4 << 20, KeyBodyBudget: 2 << 20, ProfileBodyBudget: 2 << 20}
	})
	budget := g.g.front.BodyBudget()
	key1, pid := g.newProfile(t, "hog", "1")
	key2 := g.admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"second","allowed_endpoints":["*"],"allowed_models":["*"]}`)["secret"].(string)
	const sent = 8 << 10
	var conns []net.Conn
	for i := range 4 {
		c, _ := slowUpload(t, g, "/v1/messages/count_tokens", []string{key1, key2}[i%2], 1<<20-1, sent)
		conns = append(conns, c)
	}
	// In flight and counted: each upload holds its first chunk, no upload its declared MiB.
	waitBudget(t, budget, "four slow uploads", func() bool { return budget.UsedBy(pid) >= 4*relay.ReadChunk })
	if used := budget.UsedBy(pid); used > 4*2*relay.ReadChunk {
		t.Fatalf("four uploads that sent %d bytes each hold %d bytes of the budget", sent, used)
	}
	// The other profile's body requests are served meanwhile, counting included.
	other := g.key
	if status, _, raw := g.postAs(t, other, "/v1/chat/completions", nil, `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("another profile's request beside the slow uploads: %d %s", status, raw)
	}
	if status, _, raw := g.postAs(t, other, "/v1/messages/count_tokens", anthropicVersion, `{"model":"m-anthropic","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("another profile's count beside the slow uploads: %d %s", status, raw)
	}
	if budget.UsedBy(pid) < 4*relay.ReadChunk {
		t.Fatal("the slow uploads ended before the other profile's requests")
	}
	for _, c := range conns {
		c.Close()
	}
	waitBudget(t, budget, "after the uploads ended", func() bool { return budget.Used() == 0 })
	g.checkMoney(t, pid)
}

// One profile's bodies in flight are bounded whatever its keys: a second key's upload that
// takes the profile past ProfileBodyBudget is refused with rate_limited, while another
// profile's upload of the same size fits beside it, and the profile's next upload fits once
// the first ends.
func TestBodyBudgetPerProfile(t *testing.T) {
	t.Parallel()
	g := startGenWith(t, func(c *Config) {
		c.Limits = front.Limits{BodyBudget: 8 << 20, KeyBodyBudget: 2 << 20, ProfileBodyBudget: 1 << 20}
	})
	budget := g.g.front.BodyBudget()
	a1, pa := g.newProfile(t, "pp-a", "1")
	a2 := g.admin("POST", "/admin/v1/profiles/"+pa+"/keys", `{"name":"second","allowed_endpoints":["*"],"allowed_models":["*"]}`)["secret"].(string)
	b1, pb := g.newProfile(t, "pp-b", "1")
	const length, sent = 700 << 10, 600 << 10
	first, _ := slowUpload(t, g, "/v1/chat/completions", a1, length, sent)
	waitBudget(t, budget, "the first upload", func() bool { return budget.UsedBy(pa) == length })
	// Positive: the same upload of another profile fits.
	slowUpload(t, g, "/v1/chat/completions", b1, length, sent)
	waitBudget(t, budget, "the other profile's upload", func() bool { return budget.UsedBy(pb) == length })
	// The profile's second key: 1400 KiB would be in flight for the profile, over 1 MiB.
	c, br := rawRequest(t, g.g.HTTPAddr, postHead("/v1/chat/completions", a2, length, ""))
	go func() { _, _ = c.Write(bytes.Repeat([]byte(" "), sent)) }()
	resp, raw := readAnswer(t, c, br, 10*time.Second)
	if code, msg, _ := envelope(t, raw); resp.StatusCode != http.StatusTooManyRequests || code != apierror.RateLimited || !strings.Contains(msg, "profile") {
		t.Fatalf("the profile's second upload: %d %s, want 429 rate_limited for the profile", resp.StatusCode, raw)
	}
	if budget.UsedBy(pa) != length {
		t.Fatalf("the refused upload left %d bytes of the profile's budget taken", budget.UsedBy(pa))
	}
	first.Close()
	waitBudget(t, budget, "after the first upload ended", func() bool { return budget.UsedBy(pa) == 0 })
	payload := `{"model":"m-openai","messages":[{"role":"user","content":"hi"}]}`
	if status, _, raw := g.postAs(t, a2, "/v1/chat/completions", nil, payload+strings.Repeat(" ", length-len(payload))); status != 200 {
		t.Fatalf("the profile's upload after the first ended: %d %s", status, raw)
	}
	g.checkMoney(t, pa)
}
