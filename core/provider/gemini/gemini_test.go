package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

// seen is what the fake upstream received.
type seen struct {
	mu                sync.Mutex
	path, query, key  string
	accept, userAgent string
	body              []byte
}

func (s *seen) get() (path, query, key string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path, s.query, s.key, s.body
}

// upstream replays a recorded answer, whole or one byte per write (each flushed, so the
// client reads it in 1-byte pieces).
func upstream(t *testing.T, status int, answer []byte, oneByte bool) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.path, s.query, s.key, s.body = r.URL.Path, r.URL.RawQuery, r.Header.Get(HeaderAPIKey), body
		s.accept, s.userAgent = r.Header.Get("Accept"), r.Header.Get("User-Agent")
		s.mu.Unlock()
		if r.URL.Query().Get("alt") == "sse" {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		}
		w.WriteHeader(status)
		if !oneByte {
			_, _ = w.Write(answer)
			return
		}
		rc := http.NewResponseController(w)
		r1 := iotest.OneByteReader(bytes.NewReader(answer))
		buf := make([]byte, 16)
		for {
			n, err := r1.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				_ = rc.Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newCall(base string, req *corev1.GenerateRequest) *provider.Call {
	return &provider.Call{Request: req, Upstream: provider.Upstream{PublicModel: "flash", UpstreamModel: "gemini-2.5-flash", BaseURL: base + "/", APIKey: "secret"}}
}

// show renders an event as one comparable line.
func show(ev *corev1.GenerateEvent) string {
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Start:
		s := x.Start
		return fmt.Sprintf("start id=%q model=%s passthrough=%v", s.GetId(), s.GetModel(), s.GetPassthrough())
	case *corev1.GenerateEvent_Native:
		return "native " + string(x.Native.GetData())
	case *corev1.GenerateEvent_Text:
		return "text " + x.Text.GetText()
	case *corev1.GenerateEvent_Reasoning:
		return fmt.Sprintf("reasoning %q sig=%q", x.Reasoning.GetText(), x.Reasoning.GetSignature())
	case *corev1.GenerateEvent_ToolCall:
		c := x.ToolCall
		return fmt.Sprintf("tool %d %s %s sig=%q", c.GetIndex(), c.GetId(), c.GetName(), c.GetSignature())
	case *corev1.GenerateEvent_ToolArguments:
		return fmt.Sprintf("args %d %s", x.ToolArguments.GetIndex(), x.ToolArguments.GetArguments())
	case *corev1.GenerateEvent_Finish:
		return "finish " + x.Finish.GetReason().String()
	case *corev1.GenerateEvent_Usage:
		u := x.Usage
		return fmt.Sprintf("usage in=%d cached=%d write=%d out=%d reasoning=%d reliable=%v",
			u.GetInputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens(), u.GetOutputTokens(), u.GetReasoningTokens(), u.GetReliable())
	}
	return fmt.Sprintf("%T", ev.GetEvent())
}

var synthesizedID = regexp.MustCompile(`call_[0-9a-f]{24}`)

// drain runs a stream to its end. Synthesized call ids are random: they show as call_#n in
// order of first appearance, so that equal ids would show up as equal.
func drain(t *testing.T, s provider.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	ids := map[string]string{}
	var out []string
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, synthesizedID.ReplaceAllStringFunc(show(ev), func(id string) string {
			if _, ok := ids[id]; !ok {
				ids[id] = fmt.Sprintf("call_#%d", len(ids))
			}
			return ids[id]
		}))
	}
}

var replays = []struct {
	name    string
	oneByte bool
}{{"whole", false}, {"one byte at a time", true}}

func chatRequest(stream bool) *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, EndpointFamily: "chat.completions",
		Model: "flash", Stream: stream,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: "Hi"}}}}},
	}
}

func TestTranslatedStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fixture string
		want    []string
	}{
		{
			fixture: "text_thoughts.sse",
			want: []string{
				`start id="" model=flash passthrough=false`,
				`reasoning "**Considering the greeting**\n\nThe user said hi." sig=""`,
				`reasoning "" sig="CiQB0e2Kb1s="`,
				`text Hello`,
				`text  there! How can I help?`,
				`finish FINISH_REASON_STOP`,
				// prompt 100 includes 60 cached; output = 20 candidates + 30 thoughts.
				`usage in=40 cached=60 write=0 out=50 reasoning=30 reliable=true`,
			},
		},
		{
			fixture: "tool_call_split_finish.sse",
			want: []string{
				`start id="" model=flash passthrough=false`,
				`text Let me check the weather in both cities.`,
				`tool 0 call_#0 get_weather sig="CvMBAY89a1/sig=="`,
				`args 0 {"city":"Oslo","unit":"celsius"}`,
				`tool 1 call_#1 get_weather sig=""`,
				`args 1 {"city":"Bergen"}`,
				// STOP arrived in a later chunk than the calls: still TOOL_CALLS.
				`finish FINISH_REASON_TOOL_CALLS`,
				`usage in=80 cached=0 write=0 out=51 reasoning=20 reliable=true`,
			},
		},
		{
			fixture: "prompt_blocked.sse",
			want: []string{
				`start id="" model=flash passthrough=false`,
				`finish FINISH_REASON_CONTENT_FILTER`,
				`usage in=12 cached=0 write=0 out=0 reasoning=0 reliable=true`,
			},
		},
	}
	for _, tc := range cases {
		for _, rp := range replays {
			t.Run(tc.fixture+"/"+rp.name, func(t *testing.T) {
				t.Parallel()
				srv, got := upstream(t, 200, fixture(t, tc.fixture), rp.oneByte)
				s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, chatRequest(true)))
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				events, err := drain(t, s)
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				if diff := cmp.Diff(tc.want, events); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if u := s.Usage(); !u.Reliable {
					t.Errorf("usage unreliable: %s", u.Why)
				}
				path, query, key, _ := got.get()
				if path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || query != "alt=sse" || key != "secret" {
					t.Errorf("upstream saw %s?%s key %q", path, query, key)
				}
			})
		}
	}
}

func TestStreamErrorChunkFailsTheStream(t *testing.T) {
	t.Parallel()
	for _, proto := range []corev1.Protocol{corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, corev1.Protocol_PROTOCOL_CONTENT_GENERATION} {
		for _, rp := range replays {
			t.Run(proto.String()+"/"+rp.name, func(t *testing.T) {
				t.Parallel()
				srv, _ := upstream(t, 200, fixture(t, "error_chunk.sse"), rp.oneByte)
				req := chatRequest(true)
				req.Protocol = proto
				req.RawBody = []byte(`{"contents":[{"parts":[{"text":"Hi"}]}]}`)
				s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, req))
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				events, err := drain(t, s)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Status != 503 {
					t.Fatalf("err = %v, want a *provider.Error with status 503", err)
				}
				if len(events) != 2 {
					t.Errorf("events before the error = %q, want Start and the first chunk", events)
				}
				if s.Usage().Reliable {
					t.Error("a failed stream's usage must be unreliable")
				}
			})
		}
	}
}

func TestUpstreamStatusIsRetryable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status    int
		retryable bool
	}{{503, true}, {429, true}, {400, false}}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			srv, _ := upstream(t, tc.status, []byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), false)
			_, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, chatRequest(true)))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Status != tc.status || pe.Retryable != tc.retryable {
				t.Fatalf("err = %#v, want status %d retryable %v", err, tc.status, tc.retryable)
			}
		})
	}
}

func TestEmptyStreamIsAnError(t *testing.T) {
	t.Parallel()
	for _, req := range []*corev1.GenerateRequest{chatRequest(true), geminiRequest(true, `{"contents":[]}`)} {
		t.Run(req.GetProtocol().String(), func(t *testing.T) {
			t.Parallel()
			srv, _ := upstream(t, 200, []byte(`{"candidates":[]}`), false)
			s, err := Adapter{}.Generate(context.Background(), newCall(srv.URL, req))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			var pe *provider.Error
			if _, err := drain(t, s); !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *provider.Error for a body without any SSE chunk", err)
			}
		})
	}
}

// TestDecoderFramingIsIrrelevant feeds each recording to the decoders straight from a reader
// that returns one byte per Read, and compares with a whole read: the events must not depend
// on where the transport splits the stream.
func TestDecoderFramingIsIrrelevant(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"text_thoughts.sse", "tool_call_split_finish.sse", "error_chunk.sse", "prompt_blocked.sse"} {
		for _, passthrough := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/passthrough=%v", name, passthrough), func(t *testing.T) {
				t.Parallel()
				rec := fixture(t, name)
				run := func(r io.Reader) ([]string, error) {
					var dec provider.Decoder = newDecoder()
					if passthrough {
						dec = &nativeDecoder{upstream: "gemini-2.5-flash", public: "flash"}
					}
					return drain(t, provider.NewSSEStream(io.NopCloser(r), &corev1.Start{Model: "flash"}, dec))
				}
				whole, wholeErr := run(bytes.NewReader(rec))
				oneByte, oneErr := run(iotest.OneByteReader(bytes.NewReader(rec)))
				if fmt.Sprint(wholeErr) != fmt.Sprint(oneErr) {
					t.Errorf("errors differ: whole %v, one byte %v", wholeErr, oneErr)
				}
				if diff := cmp.Diff(whole, oneByte); diff != "" {
					t.Errorf("events differ (-whole +one byte):\n%s", diff)
				}
				if len(whole) < 2 {
					t.Errorf("too few events to prove anything: %q", whole)
				}
			})
		}
	}
}
