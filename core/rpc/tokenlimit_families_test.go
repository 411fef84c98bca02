package rpc

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc/metadata"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/wire/callmd"
)

// familiesCatalog serves a realtime model and two image models, one priced per token and one
// per request, from the simulator (its GPT image answers report token usage).
const familiesCatalog = `
currency: RUB
families: [{id: fam}]
providers:
  - {id: up, kind: openai, base_url: "%s/v1", api_key_env: UP_KEY}
models:
  - id: rt
    family: fam
    routes: [{endpoint_families: [realtime], provider: up, upstream_model: gpt-realtime}]
    prices: [{endpoint_families: [realtime], billing_mode: per_token, input: "0.001", output: "0.001"}]
  - id: img
    family: fam
    routes: [{endpoint_families: [images.generations], provider: up, upstream_model: gpt-image-1}]
    prices: [{endpoint_families: [images.generations], billing_mode: per_token, input: "0.001", output: "0.001"}]
  - id: img-flat
    family: fam
    routes: [{endpoint_families: [images.generations], provider: up, upstream_model: gpt-image-1}]
    prices: [{endpoint_families: [images.generations], billing_mode: per_request, request: "0.5"}]
`

// tpmKey makes a profile with credit and a key with the token limit.
func (e *coreEnv) tpmKey(t *testing.T, tpm int32) (secret string, profile uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	p, err := e.admin.CreateProfile(ctx, &adminv1.CreateProfileRequest{DisplayName: "P"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{Id: p.GetId(), Amount: "100000", Reason: "topup", IdempotencyKey: uuid.NewString()}); err != nil {
		t.Fatal(err)
	}
	k, err := e.admin.CreateKey(ctx, &adminv1.CreateKeyRequest{ProfileId: p.GetId(), Name: "k", AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"},
		MaxTokensPerMinute: tpm})
	if err != nil {
		t.Fatal(err)
	}
	return k.GetSecret(), uuid.MustParse(p.GetId())
}

// rtSession is a realtime session as the front drives it over core's RPC.
type rtSession struct {
	t  *testing.T
	st corev1.CoreService_RealtimeClient
	md metadata.MD
}

// openRealtime opens a session of model; the error is core's refusal.
func (e *coreEnv) openRealtime(t *testing.T, key, model, requestID string) (*rtSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(as(key, requestID), 30*time.Second)
	t.Cleanup(cancel)
	st, err := e.core.Realtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&corev1.RealtimeRequest{Msg: &corev1.RealtimeRequest_Open{Open: &corev1.RealtimeOpen{Model: model}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		return nil, err
	}
	if m.GetOpened() == nil {
		t.Fatalf("first message %v, want opened", m)
	}
	md, _ := st.Header()
	return &rtSession{t: t, st: st, md: md}, nil
}

func (s *rtSession) send(event string) {
	s.t.Helper()
	if err := s.st.Send(&corev1.RealtimeRequest{Msg: &corev1.RealtimeRequest_Frame{Frame: &corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: []byte(event)}}}); err != nil {
		s.t.Fatal(err)
	}
}

// until reads frames up to the first text event of type typ (or a close frame, returned
// instead).
func (s *rtSession) until(typ string) *corev1.Frame {
	s.t.Helper()
	for {
		m, err := s.st.Recv()
		if err != nil {
			s.t.Fatalf("waiting for %s: %v", typ, err)
		}
		f := m.GetFrame()
		if f.GetKind() == corev1.FrameKind_FRAME_KIND_CLOSE || f.GetKind() == corev1.FrameKind_FRAME_KIND_TEXT && gjson.GetBytes(f.GetData(), "type").String() == typ {
			return f
		}
	}
}

// respond asks for one response and returns its input + output tokens as response.done
// reports them.
func (s *rtSession) respond(text string) int64 {
	s.t.Helper()
	s.send(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}}`)
	s.send(`{"type":"response.create"}`)
	done := s.until("response.done")
	if done.GetKind() != corev1.FrameKind_FRAME_KIND_TEXT {
		s.t.Fatalf("the session closed before response.done: %d %s", done.GetCloseCode(), done.GetCloseReason())
	}
	u := gjson.GetBytes(done.GetData(), "response.usage")
	n := u.Get("input_tokens").Int() + u.Get("output_tokens").Int()
	if n <= 0 {
		s.t.Fatalf("response.done without usage: %s", done.GetData())
	}
	return n
}

// close ends the session from the client's side and waits until core has ended it.
func (s *rtSession) close() {
	s.t.Helper()
	s.st.Send(&corev1.RealtimeRequest{Msg: &corev1.RealtimeRequest_Frame{Frame: &corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_CLOSE, CloseCode: 1000}}})
	_ = s.st.CloseSend()
	for {
		if _, err := s.st.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				s.t.Fatalf("session end: %v", err)
			}
			return
		}
	}
}

func remainingTokens(t *testing.T, md metadata.MD) int64 {
	t.Helper()
	n, err := strconv.ParseInt(mdValue(md, callmd.RateLimitRemainingTokens), 10, 64)
	if err != nil {
		t.Fatalf("no x-ratelimit-remaining-tokens in %v", md)
	}
	return n
}

// A realtime session counts each response's worst case (what its reserve pays for) against
// the key's max_tokens_per_minute: the first at the handshake, the next when its reserve is
// held; each response.done corrects its count to the reported usage, and the session's end
// gives back the count of the response that never came.
func TestRealtimeCountsTokensPerMinute(t *testing.T) {
	t.Parallel()
	e := newCoreEnvWith(t, coreOptions{catalog: familiesCatalog})
	const worst = realtimeReserveInput + realtimeReserveOutput // 36,864

	t.Run("the handshake counts the first response and the end gives back the next", func(t *testing.T) {
		key, profile := e.tpmKey(t, 50000)
		first, err := e.openRealtime(t, key, "rt", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := remainingTokens(t, first.md); got != 50000-worst {
			t.Errorf("remaining after the handshake %d, want %d", got, 50000-worst)
		}
		// A second session's first response does not fit beside the first's.
		if _, err := e.openRealtime(t, key, "rt", ""); code(err) != "rate_limited" {
			t.Fatalf("a second session with %d of 50000 counted: %v, want rate_limited", worst, err)
		}
		used := first.respond("hello")
		first.close()
		e.balance(t, profile, 1) // the response was charged once
		// What is left counts the response's usage, not its reserve, nor the next one's.
		second, err := e.openRealtime(t, key, "rt", "")
		if err != nil {
			t.Fatalf("after the first session ended: %v", err)
		}
		if got, want := remainingTokens(t, second.md), 50000-used-worst; got != want {
			t.Errorf("remaining %d, want %d (50000 - the first response's %d - the new worst case)", got, want, used)
		}
		second.close()
	})

	t.Run("a next response that does not fit ends the session after the last one", func(t *testing.T) {
		// A share below one response's worst case admits one response into an empty minute;
		// the next one's count does not fit beside the first's usage.
		key, profile := e.tpmKey(t, 30000)
		s, err := e.openRealtime(t, key, "rt", "")
		if err != nil {
			t.Fatal(err)
		}
		s.respond("hello") // delivered whole
		end := s.until("(the close)")
		if end.GetKind() != corev1.FrameKind_FRAME_KIND_CLOSE || end.GetCloseCode() != 1008 || !strings.HasPrefix(end.GetCloseReason(), "rate_limited") {
			t.Fatalf("after the response: %v, want close 1008 rate_limited", end)
		}
		s.close()
		e.balance(t, profile, 1)
	})
}

// A forwarded request counts against max_tokens_per_minute by its price: priced per token, the
// estimate its hold is sized for (corrected to the answer's usage); priced per request, the
// least (one token), and the usage its answer reports once it is charged.
func TestForwardCountsTokensPerMinute(t *testing.T) {
	t.Parallel()
	e := newCoreEnvWith(t, coreOptions{catalog: familiesCatalog})
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","prompt":"a red cat","size":"1024x1024","quality":"low"}`)
	}
	estimate := billing.InputEstimate(len(body("img"))) + billing.DefaultOutputTokens
	// Room for one estimate and margin more: the simulator's low-quality image reports a
	// few hundred tokens, so a second estimate fits beside one image's usage, not two.
	const margin = 400
	tpm := estimate + margin
	key, profile := e.tpmKey(t, int32(tpm))

	image := func(model string) (metadata.MD, int64, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(as(key, ""), 30*time.Second)
		defer cancel()
		st, err := e.core.Forward(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Head{Head: &corev1.ForwardHead{
			EndpointFamily: "images.generations", Model: model, Body: body(model)}}}); err != nil {
			t.Fatal(err)
		}
		_ = st.CloseSend()
		var used int64
		for {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				md, _ := st.Header()
				return md, 0, err
			}
			if d := m.GetData(); d != nil {
				u := gjson.GetBytes(d, "usage")
				used = u.Get("input_tokens").Int() + u.Get("output_tokens").Int()
			}
		}
		md, _ := st.Header()
		if used <= 0 || used >= estimate {
			t.Fatalf("the image reported %d tokens; the test needs some, below the estimate %d", used, estimate)
		}
		return md, used, nil
	}

	// Priced per token: admission counts the hold's estimate.
	md, used1, err := image("img")
	if err != nil {
		t.Fatal(err)
	}
	if got := remainingTokens(t, md); got != tpm-estimate {
		t.Errorf("remaining after admission %d, want %d - the estimate %d", got, tpm, estimate)
	}
	// The second's estimate fits only because the first was corrected to its usage.
	md, used2, err := image("img")
	if err != nil {
		t.Fatalf("second request (first corrected to %d): %v", used1, err)
	}
	if got, want := remainingTokens(t, md), tpm-used1-estimate; got != want {
		t.Errorf("remaining %d, want %d", got, want)
	}
	if used1 > margin || used1+used2 <= margin {
		t.Fatalf("the images reported %d and %d tokens; the test needs one at most %d and two above it", used1, used2, margin)
	}
	// Now the estimate does not fit: refused before the upstream, nothing charged.
	if md, _, err := image("img"); code(err) != "rate_limited" || remainingTokens(t, md) != tpm-used1-used2 {
		t.Fatalf("third request with %d used: %v %v, want rate_limited", used1+used2, err, md)
	}
	// Priced per request: admitted with room for a token, its reported usage counted after.
	md, used3, err := image("img-flat")
	if err != nil {
		t.Fatalf("per-request image: %v", err)
	}
	if got, want := remainingTokens(t, md), tpm-used1-used2-1; got != want {
		t.Errorf("remaining after the per-request admission %d, want %d", got, want)
	}
	md, _, err = image("img-flat")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := remainingTokens(t, md), tpm-used1-used2-used3-1; got != want {
		t.Errorf("remaining %d, want %d (the per-request image's %d tokens counted)", got, want, used3)
	}
	e.balance(t, profile, 4)
}
