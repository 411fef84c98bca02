package anthropic

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

const (
	publicModel   = "claude-public"
	upstreamModel = "claude-sonnet-4-5-20250929"
	testKey       = "sk-ant-test-key"
)

// recorded is one request the fake upstream received.
type recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// upstream replays a recorded answer, whole or one byte per write (each flushed), so that
// the adapter's stream framing is tested against both.
type upstream struct {
	status      int
	contentType string
	body        []byte
	oneByte     bool

	mu   sync.Mutex
	reqs []recorded
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.reqs = append(u.reqs, recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	u.mu.Unlock()
	ct := u.contentType
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(u.status)
	if !u.oneByte {
		_, _ = w.Write(u.body)
		return
	}
	rc := http.NewResponseController(w)
	for i := range u.body {
		if _, err := w.Write(u.body[i : i+1]); err != nil {
			return
		}
		_ = rc.Flush()
	}
}

func (u *upstream) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.reqs[len(u.reqs)-1]
}

func serve(t *testing.T, u *upstream) string {
	t.Helper()
	if u.status == 0 {
		u.status = http.StatusOK
	}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return srv.URL
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newCall(baseURL string, req *corev1.GenerateRequest) *provider.Call {
	return &provider.Call{
		Request: req, DefaultMaxTokens: 8192, Upstream: provider.Upstream{
			PublicModel: publicModel, UpstreamModel: upstreamModel, BaseURL: baseURL + "/", APIKey: testKey,
			Timeouts: provider.Timeouts{FirstByte: 5 * time.Second, Idle: 5 * time.Second},
		},
	}
}

// chunkings are the two ways every recording is replayed.
var chunkings = []struct {
	name    string
	oneByte bool
}{{"whole", false}, {"one byte at a time", true}}
