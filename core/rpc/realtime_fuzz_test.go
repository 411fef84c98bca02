package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"modelgateway/core/metering"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
)

// FuzzRealtimeFrames feeds any text frame to both directions' readers: the client's (the
// fixed-model rule of session.update) and the upstream's usage of response.done. Nothing may
// panic; a forwarded session.update never names a model other than the session's. Seeds: the
// simulator's golden realtime transcript, one event per line.
func FuzzRealtimeFrames(f *testing.F) {
	if b, err := os.ReadFile("../simulator/testdata/realtime-text.jsonl"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
	f.Add([]byte(`{"type":"session.update","event_id":"e","session":{"type":"realtime","model":"other"}}`))
	f.Add([]byte(`{"type":"session.update","session":{"model":"rt","instructions":"x"}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		x := &session{b: &billed{m: &snapshot.Model{Model: store.Model{ID: "rt"}}}, upstreamModel: "gpt-realtime"}
		fwd, refusal := x.clientEvent(frame)
		if (fwd == nil) == (refusal == nil) {
			t.Fatalf("forward %q and refusal %q", fwd, refusal)
		}
		// Read as an upstream reads JSON (escapes decoded, keys case-sensitive, the last of
		// duplicate keys wins), a forwarded session.update names the upstream model or none.
		var ev, sess map[string]json.RawMessage
		var typ, model string
		if fwd != nil && json.Unmarshal(fwd, &ev) == nil && json.Unmarshal(ev["type"], &typ) == nil && typ == "session.update" &&
			json.Unmarshal(ev["session"], &sess) == nil && sess["model"] != nil {
			if json.Unmarshal(sess["model"], &model) != nil || model != "gpt-realtime" {
				t.Fatalf("forwarded a switch to %s: %s", sess["model"], fwd)
			}
		}
		_ = metering.FromRealtimeResponse(frame)
	})
}
