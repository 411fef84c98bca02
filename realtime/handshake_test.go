package realtime

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The key reaches core as Authorization: Bearer whichever way the client sent it (spec 4.6.1,
// spec 5; browsers can only use the subprotocol), and the handshake reaches core as the client
// made it.
func TestHandshakeReachesCore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		query     string
		header    http.Header
		protocols []string
		wantKey   string
		wantOpen  *corev1.RealtimeOpen
		wantProto string
	}{
		{name: "bearer header", query: "?model=gpt-realtime", header: bearer("sk-a"),
			wantKey: "sk-a", wantOpen: &corev1.RealtimeOpen{Model: "gpt-realtime"}},
		{name: "x-api-key header", query: "?model=rt", header: http.Header{"X-Api-Key": {"sk-b"}},
			wantKey: "sk-b", wantOpen: &corev1.RealtimeOpen{Model: "rt"}},
		{name: "api-key header", query: "?model=rt", header: http.Header{"Api-Key": {"sk-c"}},
			wantKey: "sk-c", wantOpen: &corev1.RealtimeOpen{Model: "rt"}},
		{name: "authorization wins over x-api-key", query: "?model=rt",
			header:  http.Header{"Authorization": {"Bearer sk-first"}, "X-Api-Key": {"sk-second"}},
			wantKey: "sk-first", wantOpen: &corev1.RealtimeOpen{Model: "rt"}},
		{name: "browser subprotocol key, answered realtime", query: "?model=rt",
			protocols: []string{"realtime", "openai-insecure-api-key.sk-d"},
			wantKey:   "sk-d", wantOpen: &corev1.RealtimeOpen{Model: "rt"}, wantProto: "realtime"},
		{name: "browser beta subprotocol", query: "?model=rt",
			protocols: []string{"realtime", "openai-insecure-api-key.ek_e", "openai-beta.realtime-v1"},
			wantKey:   "ek_e", wantOpen: &corev1.RealtimeOpen{Model: "rt", Beta: true}, wantProto: "realtime"},
		{name: "subprotocol key without realtime offered gets no subprotocol", query: "?model=rt",
			protocols: []string{"openai-insecure-api-key.sk-f"},
			wantKey:   "sk-f", wantOpen: &corev1.RealtimeOpen{Model: "rt"}},
		{name: "beta header", query: "?model=rt",
			header:  http.Header{"Authorization": {"Bearer sk-g"}, "Openai-Beta": {"assistants=v2, realtime=v1"}},
			wantKey: "sk-g", wantOpen: &corev1.RealtimeOpen{Model: "rt", Beta: true}},
		{name: "other query parameters are passed on, key is not", query: "?model=rt&intent=transcription&key=sk-leak",
			header:  bearer("sk-h"),
			wantKey: "sk-h", wantOpen: &corev1.RealtimeOpen{Model: "rt", Query: map[string]string{"intent": "transcription"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEcho()
			ws, _ := serve(t, &Handler{Realtime: e.run})
			h := c.header.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("X-Request-Id", "req-1")
			conn, resp, err := dial(t, ws+c.query, h, c.protocols...)
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != c.wantProto {
				t.Errorf("subprotocol answer %q, want %q", got, c.wantProto)
			}
			if got := resp.Header.Get("X-Request-Id"); got != "req-1" {
				t.Errorf("x-request-id of the upgrade %q", got)
			}
			o := next(t, e.opens, "open")
			if diff := cmp.Diff(c.wantOpen, o.open, protocmp.Transform()); diff != "" {
				t.Errorf("open (-want +got):\n%s", diff)
			}
			if got := o.md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+c.wantKey {
				t.Errorf("authorization metadata %q, want Bearer %s", got, c.wantKey)
			}
			if got := o.md.Get("x-request-id"); len(got) != 1 || got[0] != "req-1" {
				t.Errorf("x-request-id metadata %q", got)
			}
			_ = conn.WriteMessage(websocket.TextMessage, []byte("x")) // the session works
			if f := next(t, e.frames, "frame"); string(f.GetData()) != "x" {
				t.Errorf("frame %v", f)
			}
		})
	}
}

// Refusals come before the upgrade as the spec envelope (spec 2.4, 7), with the status of the
// code and the request id: those the front decides without asking core, and core's own, as
// an *apierror.Error or as the gRPC status its interceptor makes of one.
func TestRefusalsBeforeUpgrade(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		method   string // "" = a WebSocket dial
		query    string
		header   http.Header
		core     error // what core refuses with
		coreCall bool  // core is asked
	}{
		{name: "no key", query: "?model=rt", header: http.Header{}},
		{name: "empty bearer", query: "?model=rt", header: http.Header{"Authorization": {"Bearer  "}}},
		{name: "not a websocket request", method: http.MethodGet, query: "?model=rt", header: bearer("sk-1")},
		{name: "not a GET", method: http.MethodPost, query: "?model=rt", header: bearer("sk-1")},
		{name: "no model", query: "", header: bearer("sk-1")},
		{name: "no key beats no model", query: "", header: http.Header{}},
		{name: "core refuses the model", query: "?model=nope", header: bearer("sk-1"), coreCall: true,
			core: apierror.New(apierror.ModelNotFound, "the model nope does not exist or is not available to this key")},
		{name: "core refuses through a gRPC status", query: "?model=rt", header: bearer("sk-1"), coreCall: true,
			core: apistatus.ToStatus(&apierror.Error{Code: apierror.InvalidRequest, Status: http.StatusTooManyRequests,
				Message: "the key already has 16 realtime sessions open"}, "")},
		{name: "core refuses the key", query: "?model=rt", header: bearer("sk-revoked"), coreCall: true,
			core: apierror.New(apierror.InvalidKey, "the API key is invalid")},
		{name: "core returns without opening", query: "?model=rt", header: bearer("sk-1"), coreCall: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			ws, base := serve(t, &Handler{Realtime: func(st corev1.CoreService_RealtimeServer) error {
				calls.Add(1)
				if _, err := st.Recv(); err != nil {
					return err
				}
				return c.core
			}})
			h := c.header.Clone()
			id := "req-" + strings.ReplaceAll(c.name, " ", "-")
			h.Set("X-Request-Id", id)
			var resp *http.Response
			if c.method == "" {
				conn, r, err := dial(t, ws+c.query, h)
				if err == nil {
					conn.Close()
					t.Fatal("the connection was upgraded")
				}
				if r == nil {
					t.Fatalf("no HTTP answer: %v", err)
				}
				resp = r
			} else {
				req, _ := http.NewRequestWithContext(context.Background(), c.method, base+c.query, nil)
				req.Header = h
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Body.Close()
				resp = r
			}
			got := "HTTP " + strconv.Itoa(resp.StatusCode) + "\n" + body(t, resp)
			golden(t, filepath.Join("testdata", "refusals", strings.ReplaceAll(c.name, " ", "_")+".golden"), got)

			var env apierror.Envelope
			if err := json.Unmarshal([]byte(strings.SplitN(got, "\n", 2)[1]), &env); err != nil {
				t.Fatalf("not an envelope: %v", err)
			}
			if env.Error.RequestID != id || resp.Header.Get("X-Request-Id") != id {
				t.Errorf("request id %q (header %q), want %q", env.Error.RequestID, resp.Header.Get("X-Request-Id"), id)
			}
			if env.Error.Type != apierror.Type || resp.StatusCode != statusOf(env.Error.Code, c.core) {
				t.Errorf("type %q, status %d for %s", env.Error.Type, resp.StatusCode, env.Error.Code)
			}
			if n := calls.Load(); (n == 1) != c.coreCall {
				t.Errorf("core called %d times", n)
			}
		})
	}
}

// statusOf is the status a refusal answers with: the code's, unless core chose one.
func statusOf(code string, coreErr error) int {
	if coreErr != nil {
		if e := apistatus.FromError(coreErr); e.Code == code && e.Status != 0 {
			return e.Status
		}
	}
	return apierror.HTTPStatus(code)
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
