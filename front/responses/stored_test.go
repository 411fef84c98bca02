package responses

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"google.golang.org/grpc"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// chainCore answers GetStoredResponseChain with items, or refuses with err.
type chainCore struct {
	corev1.CoreServiceClient
	items string
	err   error
	asked []string
}

func (c *chainCore) GetStoredResponseChain(_ context.Context, in *corev1.GetStoredResponseChainRequest, _ ...grpc.CallOption) (*corev1.StoredResponseChain, error) {
	c.asked = append(c.asked, in.GetId())
	if c.err != nil {
		return nil, c.err
	}
	return &corev1.StoredResponseChain{Items: []byte(c.items), Responses: 1}, nil
}

const storedChain = `[{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"my name is Ada"}]},` +
	`{"type":"message","id":"msg_2","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hello Ada","annotations":[]}]}]`

// previous_response_id becomes the stored items then the request's own input, in the raw
// body (for a responses upstream) and in the canonical messages (for the others); the id
// itself is gone from the body and kept for the echo.
func TestDecodeExpandsPreviousResponse(t *testing.T) {
	cases := []struct {
		name, body string
		own        int // items of the request's own
	}{
		{"string input", `{"model":"m","previous_response_id":"resp_1","input":"and my name?"}`, 1},
		{"item input", `{"model":"m","previous_response_id":"resp_1","input":[{"role":"user","content":"and my name?"}]}`, 1},
		{"no input", `{"model":"m","previous_response_id":"resp_1"}`, 0},
	}
	for _, c := range cases {
		core := &chainCore{items: storedChain}
		req, apiErr := Protocol{Core: core}.Decode(httptest.NewRequest("POST", "/v1/responses", nil), []byte(c.body))
		if apiErr != nil {
			t.Fatalf("%s: %v", c.name, apiErr)
		}
		raw := req.GetRawBody()
		if gjson.GetBytes(raw, "previous_response_id").Exists() || req.GetExpandedPreviousResponseId() != "resp_1" || req.GetChainItems() != 2 {
			t.Errorf("%s: body %s, expanded %q, chain items %d", c.name, raw, req.GetExpandedPreviousResponseId(), req.GetChainItems())
		}
		if n := gjson.GetBytes(raw, "input.#").Int(); n != int64(2+c.own) {
			t.Errorf("%s: %d input items, want %d: %s", c.name, n, 2+c.own, raw)
		}
		if n := len(req.GetMessages()); n != 2+c.own {
			t.Errorf("%s: %d canonical messages, want %d", c.name, n, 2+c.own)
		}
		if len(core.asked) != 1 || core.asked[0] != "resp_1" {
			t.Errorf("%s: core asked %v", c.name, core.asked)
		}
		// Its own items are stored, with ids; the chain's are not stored again.
		own := ownItems(req, func(p string) string { return p + "new" })
		if n := gjson.GetBytes(own, "#").Int(); n != int64(c.own) {
			t.Errorf("%s: %d own items stored: %s", c.name, n, own)
		}
		if c.own == 1 && (gjson.GetBytes(own, "0.id").String() != "msg_new" || gjson.GetBytes(own, "0.content.0.type").String() != "input_text") {
			t.Errorf("%s: own item stored as %s", c.name, own)
		}
	}
}

func TestDecodeRefusesPreviousResponse(t *testing.T) {
	refusal := apierror.New(apierror.InvalidRequest, "previous response with id %q not found", "resp_x")
	cases := []struct {
		name, body string
		core       *chainCore
		code       string
		param      string
		asked      bool
	}{
		{"unknown id", `{"model":"m","previous_response_id":"resp_x","input":"hi"}`, &chainCore{err: refusal}, apierror.InvalidRequest, "previous_response_id", true},
		{"key refused", `{"model":"m","previous_response_id":"resp_x","input":"hi"}`, &chainCore{err: apierror.New(apierror.InvalidKey, "bad")}, apierror.InvalidKey, "", true},
		{"empty id", `{"model":"m","previous_response_id":"","input":"hi"}`, &chainCore{}, apierror.InvalidRequest, "previous_response_id", false},
		{"with conversation", `{"model":"m","previous_response_id":"resp_1","conversation":"conv_1","input":"hi"}`, &chainCore{}, apierror.InvalidRequest, "previous_response_id", false},
		{"bad body first", `{"model":"m","previous_response_id":"resp_1","input":7}`, &chainCore{}, apierror.InvalidRequest, "", false},
	}
	for _, c := range cases {
		_, apiErr := Protocol{Core: c.core}.Decode(httptest.NewRequest("POST", "/v1/responses", nil), []byte(c.body))
		if apiErr == nil || apiErr.Code != c.code || apiErr.Param != c.param {
			t.Errorf("%s: %+v, want %s param %q", c.name, apiErr, c.code, c.param)
		}
		if (len(c.core.asked) > 0) != c.asked {
			t.Errorf("%s: core asked %v", c.name, c.core.asked)
		}
	}
	// Without core (the protocol alone), the id is decoded as sent.
	req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/responses", nil), []byte(`{"model":"m","previous_response_id":"resp_1","input":"hi"}`))
	if apiErr != nil || !strings.Contains(string(req.GetRawBody()), "resp_1") && req.GetRawBody() != nil {
		t.Errorf("without core: %v", apiErr)
	}
}
