package rpc

import (
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/store"
)

// A socket caller cannot send a previous_response_id: only the HTTP front expands one, and
// unexpanded it would reach the upstream as the gateway's id.
func TestSocketRefusesPreviousResponseID(t *testing.T) {
	cases := []struct {
		name, body string
		refused    bool
	}{
		{"plain", `{"model":"m","input":"hi"}`, false},
		{"null id", `{"model":"m","input":"hi","previous_response_id":null}`, false},
		{"id in the text only", `{"model":"m","input":"previous_response_id"}`, false},
		{"an id", `{"model":"m","input":"hi","previous_response_id":"resp_1"}`, true},
	}
	for _, c := range cases {
		for _, p := range []corev1.Protocol{corev1.Protocol_PROTOCOL_RESPONSES, corev1.Protocol_PROTOCOL_RESPONSES_COMPACT} {
			err := checkRaw(&corev1.GenerateRequest{Protocol: p, Model: "m", RawBody: []byte(c.body)}, false)
			if (err != nil) != c.refused {
				t.Errorf("%s on %s: refused %v, want %v (%v)", c.name, p, err != nil, c.refused, err)
			}
			if err != nil && !strings.Contains(err.Message, "previous_response_id") {
				t.Errorf("%s: the message does not name the parameter: %s", c.name, err.Message)
			}
		}
	}
}

// The chain's arrays join into one, in order, skipping empty ones.
func TestChainItems(t *testing.T) {
	got := string(chainItems([]store.ChainLink{
		{InputItems: []byte(`[{"a":1}]`), Output: []byte(`[ ]`)},
		{InputItems: []byte(`[]`), Output: []byte(`[{"b":2}, {"c":3}]`)},
		{InputItems: []byte(` [ {"d":4} ] `), Output: []byte(`[{"e":5}]`)},
	}))
	if want := `[{"a":1},{"b":2}, {"c":3},{"d":4},{"e":5}]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := string(chainItems(nil)); got != "[]" {
		t.Errorf("empty chain: %s", got)
	}
}

// Input item pages: newest first by default, after an id, has_more, first and last ids.
func TestItemPage(t *testing.T) {
	items := []byte(`[{"id":"a"},{"id":"b"},{"id":"c"}]`)
	cases := []struct {
		after string
		limit int
		desc  bool
		want  string
	}{
		{"", 20, true, `{"object":"list","data":[{"id":"c"},{"id":"b"},{"id":"a"}],"first_id":"c","last_id":"a","has_more":false}`},
		{"", 2, false, `{"object":"list","data":[{"id":"a"},{"id":"b"}],"first_id":"a","last_id":"b","has_more":true}`},
		{"b", 2, true, `{"object":"list","data":[{"id":"a"}],"first_id":"a","last_id":"a","has_more":false}`},
		{"a", 2, true, `{"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false}`},
	}
	for _, c := range cases {
		got, err := itemPage(items, c.after, c.limit, c.desc)
		if err != nil || string(got) != c.want {
			t.Errorf("after %q limit %d desc %v: %s %v, want %s", c.after, c.limit, c.desc, got, err, c.want)
		}
	}
	if _, err := itemPage(items, "zz", 2, true); err == nil || err.Code != "invalid_request_error" {
		t.Errorf("unknown after: %v", err)
	}
}
