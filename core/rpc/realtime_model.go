package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/sjson"
	"modelgateway/core/wire/strictjson"
)

// clientEvent applies the session's fixed model: a session.update that names another model is
// refused with the protocol's own error event (and not forwarded); one that names the
// session's model gets the upstream name.
//
// The event is read as the upstream will read it: a key spelled with escapes ("mod\u0065l")
// must not slip a switch past the check, so anything that could name a model is decoded in
// full and forwarded re-encoded; one with a name given twice in an object is refused
// (contract: one reading of a body), as readers disagree on which one counts.
func (x *session) clientEvent(data []byte) (forward, refusal []byte) {
	if !bytes.Contains(data, []byte(`model`)) && !bytes.Contains(data, []byte(`\`)) {
		return data, nil // cannot name a model: the hot path (audio appends) stays a scan
	}
	if err := strictjson.Check(data); err != nil {
		return nil, x.refusal("invalid_request_error", "", err.Error(), nil)
	}
	var ev map[string]json.RawMessage
	if strictjson.Unmarshal(data, &ev) != nil {
		return data, nil // not an object: the upstream refuses it as it would anyway
	}
	var typ string
	if strictjson.Unmarshal(ev["type"], &typ) != nil || typ != "session.update" {
		return data, nil
	}
	var sess map[string]json.RawMessage
	if strictjson.Unmarshal(ev["session"], &sess) != nil {
		return data, nil
	}
	raw, ok := sess["model"]
	if !ok {
		return data, nil
	}
	var model string
	_ = strictjson.Unmarshal(raw, &model)
	if model != x.b.m.ID && model != x.upstreamModel {
		var eventID *string
		_ = strictjson.Unmarshal(ev["event_id"], &eventID)
		return nil, x.modelRefusal(model, eventID)
	}
	sess["model"], _ = json.Marshal(x.upstreamModel)
	ev["session"], _ = json.Marshal(sess)
	out, err := json.Marshal(ev)
	if err != nil {
		return data, nil
	}
	return out, nil
}

// modelRefusal is the protocol's error event for a model switch.
func (x *session) modelRefusal(model string, eventID *string) []byte {
	msg := fmt.Sprintf("the session's model is fixed to %q by the connection; session.update may not switch it to %q", x.b.m.ID, model)
	return x.refusal("model_switch_not_allowed", "session.model", msg, eventID)
}

// refusal is the protocol's error event for a client event the gateway does not forward.
func (x *session) refusal(code, param, msg string, eventID *string) []byte {
	refusal, _ := sjson.SetBytes([]byte(`{"type":"error","error":{"type":"invalid_request_error"}}`), "error.code", code)
	if param != "" {
		refusal, _ = sjson.SetBytes(refusal, "error.param", param)
	} else {
		refusal, _ = sjson.SetRawBytes(refusal, "error.param", []byte("null"))
	}
	refusal, _ = sjson.SetBytes(refusal, "error.message", msg)
	refusal, _ = sjson.SetBytes(refusal, "event_id", fmt.Sprintf("event_gw_%d", x.events.Add(1)))
	if eventID != nil {
		refusal, _ = sjson.SetBytes(refusal, "error.event_id", *eventID)
	} else {
		refusal, _ = sjson.SetRawBytes(refusal, "error.event_id", []byte("null"))
	}
	return refusal
}
