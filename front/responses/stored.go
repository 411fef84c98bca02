package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	rw "modelgateway/core/wire/responseswire"
	"modelgateway/front/relay"
)

// Stored responses (contract.md "Stored responses"). A previous_response_id is expanded here,
// before decoding: the stored conversation's items, then the request's own input, become the
// request's input. So every upstream kind gets the whole conversation in its own shape, the
// raw body a responses upstream receives never names the gateway's id, and the hold and the
// charge count the expanded input like any other.

// paramPreviousResponseID is the parameter a refused continuation names.
const paramPreviousResponseID = "previous_response_id"

// storeTimeout bounds keeping one response; the answer does not wait longer for it.
const storeTimeout = 10 * time.Second

// expand replaces the body's input by the stored conversation of id followed by the body's
// own input, and decodes the result.
func (p Protocol) expand(r *http.Request, body []byte, id string) (*corev1.GenerateRequest, *apierror.Error) {
	if rw.InputKind(json.RawMessage(gjson.GetBytes(body, "conversation").Raw)) != rw.InputAbsent {
		e := invalid("previous_response_id cannot be combined with conversation")
		e.Param = paramPreviousResponseID
		return nil, e
	}
	chain, err := p.Core.GetStoredResponseChain(relay.OutgoingContext(r), &corev1.GetStoredResponseChainRequest{Id: id})
	if err != nil {
		e := relay.ErrorOf(err)
		if e.Code == apierror.InvalidRequest {
			c := *e
			c.Param = paramPreviousResponseID
			e = &c
		}
		return nil, e
	}
	own := ownInput(body)
	input := joinArrays(chain.GetItems(), own)
	expanded, err := sjson.SetRawBytes(body, "input", input)
	if err == nil {
		expanded, err = sjson.DeleteBytes(expanded, paramPreviousResponseID)
	}
	if err != nil {
		return nil, invalid("the request body cannot be joined to its conversation: %v", err)
	}
	req, apiErr := p.decode(expanded)
	if apiErr != nil {
		return nil, apiErr
	}
	req.RawBody = expanded
	req.ExpandedPreviousResponseId = id
	req.ChainItems = int32(gjson.GetBytes(chain.GetItems(), "#").Int())
	return req, nil
}

// ownInput is the body's input as an array of items: a string input is one user message.
func ownInput(body []byte) []byte {
	in := gjson.GetBytes(body, "input")
	switch in.Type {
	case gjson.String:
		return userMessage(in.String())
	case gjson.JSON:
		if in.IsArray() {
			return []byte(in.Raw)
		}
	}
	return []byte("[]")
}

func userMessage(text string) []byte {
	b, _ := json.Marshal([]map[string]any{{
		"type": rw.ItemMessage, "role": rw.RoleUser,
		"content": []map[string]string{{"type": rw.PartInputText, "text": text}},
	}})
	return b
}

// joinArrays concatenates two JSON arrays.
func joinArrays(a, b []byte) []byte {
	ai, bi := arrayInner(a), arrayInner(b)
	out := make([]byte, 0, len(ai)+len(bi)+3)
	out = append(out, '[')
	out = append(out, ai...)
	if len(ai) > 0 && len(bi) > 0 {
		out = append(out, ',')
	}
	out = append(out, bi...)
	return append(out, ']')
}

func arrayInner(a []byte) []byte {
	a = bytes.TrimSpace(a)
	if len(a) < 2 || a[0] != '[' {
		return nil
	}
	return bytes.TrimSpace(a[1 : len(a)-1])
}

// storing says whether this answer is kept: store is true unless the client said false,
// and the compact route keeps nothing.
func (p Protocol) storing(req *corev1.GenerateRequest) bool {
	if p.Compact || p.Core == nil {
		return false
	}
	return gjson.GetBytes(req.GetRawBody(), "store").Type != gjson.False
}

// Id prefixes of input items the client sent without an id, by item type.
var itemPrefixes = map[string]string{
	rw.ItemMessage: "msg_", rw.ItemFunctionCall: "fc_", rw.ItemFunctionCallOutput: "fco_",
	rw.ItemReasoning: "rs_",
}

// ownItems is the request's own input items as stored: each with an id and a type, message
// content as an array of parts (the shape GET input_items lists).
func ownItems(req *corev1.GenerateRequest, newID func(string) string) []byte {
	in := gjson.GetBytes(req.GetRawBody(), "input")
	var items []json.RawMessage
	switch {
	case in.Type == gjson.String:
		_ = json.Unmarshal(userMessage(in.String()), &items)
	case in.IsArray():
		_ = json.Unmarshal([]byte(in.Raw), &items)
		if n := int(req.GetChainItems()); n <= len(items) {
			items = items[n:]
		}
	}
	out := make([]json.RawMessage, 0, len(items))
	for _, raw := range items {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		typ := rw.ItemMessage
		if t, ok := m["type"]; ok {
			_ = json.Unmarshal(t, &typ)
		} else {
			m["type"], _ = json.Marshal(typ)
		}
		if typ == rw.ItemMessage {
			normalizeContent(m)
		}
		if id, ok := m["id"]; !ok || string(id) == `""` || string(id) == "null" {
			prefix, ok := itemPrefixes[typ]
			if !ok {
				prefix = "item_"
			}
			m["id"], _ = json.Marshal(newID(prefix))
		}
		b, err := json.Marshal(m)
		if err == nil {
			out = append(out, b)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// normalizeContent turns a message's string content into one text part.
func normalizeContent(m map[string]json.RawMessage) {
	c, ok := m["content"]
	if !ok || rw.InputKind(c) != rw.InputString {
		return
	}
	var text, role string
	_ = json.Unmarshal(c, &text)
	_ = json.Unmarshal(m["role"], &role)
	part := rw.PartInputText
	if role == rw.RoleAssistant {
		part = rw.PartOutputText
	}
	m["content"], _ = json.Marshal([]map[string]string{{"type": part, "text": text}})
}

// keep stores the finished response object under its id. A failure is logged, not the
// client's: the answer has been paid for and goes out; continuing it later is refused.
func (e *encoder) keep(id string, response []byte) {
	if !e.store || e.kept {
		return
	}
	e.kept = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(relay.OutgoingContext(e.r)), storeTimeout)
	defer cancel()
	_, err := e.core.PutStoredResponse(ctx, &corev1.PutStoredResponseRequest{
		Id: id, PreviousResponseId: e.req.GetExpandedPreviousResponseId(),
		Response: response, InputItems: ownItems(e.req, e.newID),
	})
	if err != nil {
		slog.Warn("storing a response failed", "request_id", e.r.Header.Get("X-Request-Id"), "response_id", id, "err", err)
	}
}

// keepValue stores a translated Response.
func (e *encoder) keepValue(resp *rw.Response) {
	if !e.store {
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return
	}
	e.keep(resp.ID, b)
}

// Response lifecycle events carry the whole Response, whose id is the gateway's.
var lifecycle = map[string]bool{
	"response.created": true, "response.in_progress": true, "response.queued": true,
	rw.EventCompleted: true, rw.EventIncomplete: true, rw.EventFailed: true,
}

// ownID puts the gateway's id (and the previous_response_id the client sent) into a
// passthrough Response at path ("" for a whole body, "response" in an event).
func (e *encoder) ownID(data []byte, path string) []byte {
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	out, err := sjson.SetBytes(data, at("id"), e.pt.id)
	if err != nil {
		return data
	}
	if prev := e.req.GetExpandedPreviousResponseId(); prev != "" {
		if o, err := sjson.SetBytes(out, at(paramPreviousResponseID), prev); err == nil {
			out = o
		}
	}
	return out
}
