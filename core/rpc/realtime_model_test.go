package rpc

import (
	"strings"
	"testing"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// The fixed model of a realtime session holds however the client spells session.update.
func TestRealtimeModelSwitchSpellings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, frame string
		refused     bool
		forwarded   string // a substring of what goes upstream
	}{
		{"the session's own model is renamed to the upstream's", `{"type":"session.update","session":{"model":"rt"}}`, false, `"model":"gpt-realtime"`},
		{"another model is refused", `{"type":"session.update","session":{"model":"other"}}`, true, ""},
		{"an escaped key does not hide a switch", `{"type":"session.update","session":{"mod\u0065l":"other"}}`, true, ""},
		{"an escaped type does not hide a switch", `{"type":"session.upd\u0061te","session":{"model":"other"}}`, true, ""},
		{"duplicate keys are refused", `{"type":"session.update","session":{"model":"rt","model":"other"}}`, true, ""},
		{"duplicate keys are refused whatever they name", `{"type":"session.update","session":{"model":"rt","instructions":"a","instructions":"b"}}`, true, ""},
		{"a case variant is another member", `{"type":"session.update","session":{"model":"rt","MODEL":"other"}}`, false, `"MODEL":"other"`},
		{"an audio append passes untouched", `{"type":"input_audio_buffer.append","audio":"AAAA"}`, false, `"audio":"AAAA"`},
		{"a different event that mentions a model passes", `{"type":"response.create","response":{"metadata":{"model":"x"}}}`, false, `"model":"x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := &session{b: &billed{m: &snapshot.Model{Model: store.Model{ID: "rt"}}}, upstreamModel: "gpt-realtime"}
			fwd, refusal := x.clientEvent([]byte(tc.frame))
			if (refusal != nil) != tc.refused {
				t.Fatalf("refusal %s, forwarded %s", refusal, fwd)
			}
			if !tc.refused && !strings.Contains(string(fwd), tc.forwarded) {
				t.Errorf("forwarded %s, want it to hold %s", fwd, tc.forwarded)
			}
		})
	}
}
