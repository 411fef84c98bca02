package anthropic

import (
	"encoding/json"
	"math"
	"strconv"

	"modelgateway/core/wire/jsontext"
	mw "modelgateway/core/wire/messageswire"
)

// encodeRequest is json.Marshal(w), byte for byte. A chat request's usual shape — text
// messages, a system text, stop sequences, sampling numbers, stream, a user id — is written
// here in one pass: through reflection, each content block's MarshalJSON ran a json.Marshal
// of its own whose result the outer encoder checked and copied again, some 15,000
// instructions for a one-message request. Anything else (tools, thinking, output_config,
// cache control, citations, other block types, a string with <, > or &, which json.Marshal
// escapes for HTML, a number it would write in exponent form) goes to json.Marshal.
func encodeRequest(w *mw.Request) ([]byte, error) {
	if plainFields(w) { // else no buffer: a request with tools is json.Marshal's at once
		if b, ok := appendRequest(make([]byte, 0, requestSize(w)), w); ok {
			return b, nil
		}
	}
	return json.Marshal(w)
}

// plainFields reports whether w's fields are all of the shape appendRequest writes (its
// content blocks aside).
func plainFields(w *mw.Request) bool {
	return w.MaxTokens != nil && len(w.Tools) == 0 && w.ToolChoice == nil && w.Thinking == nil &&
		w.OutputConfig == nil && w.ServiceTier == "" && len(w.CacheControl) == 0
}

// requestSize is room for the encoded request: its texts and some for the keys.
func requestSize(w *mw.Request) int {
	n := 128 + len(w.Model)
	for i := range w.Messages {
		for j := range w.Messages[i].Content {
			n += 48 + len(w.Messages[i].Content[j].Text)
		}
	}
	for i := range w.System {
		n += 48 + len(w.System[i].Text)
	}
	for _, s := range w.StopSequences {
		n += 4 + len(s)
	}
	return n
}

// appendRequest writes w as json.Marshal does, in its fields' order, or reports false for a
// request outside the shape above (what it wrote is then to be dropped).
func appendRequest(b []byte, w *mw.Request) ([]byte, bool) {
	if !plainFields(w) {
		return nil, false
	}
	ok := true
	b = append(b, `{"model":`...)
	b, ok = appendPlain(b, w.Model, ok)
	b = strconv.AppendInt(append(b, `,"max_tokens":`...), *w.MaxTokens, 10)
	b = append(b, `,"messages":`...)
	if w.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range w.Messages {
			m := &w.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b, ok = appendPlain(b, m.Role, ok)
			b = append(b, `,"content":`...)
			b, ok = appendTexts(b, m.Content, ok)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(w.System) > 0 {
		b = append(b, `,"system":`...)
		b, ok = appendTexts(b, w.System, ok)
	}
	if len(w.StopSequences) > 0 {
		b = append(b, `,"stop_sequences":[`...)
		for i, s := range w.StopSequences {
			if i > 0 {
				b = append(b, ',')
			}
			b, ok = appendPlain(b, s, ok)
		}
		b = append(b, ']')
	}
	if w.Temperature != nil {
		b, ok = appendFloat(append(b, `,"temperature":`...), *w.Temperature, ok)
	}
	if w.TopP != nil {
		b, ok = appendFloat(append(b, `,"top_p":`...), *w.TopP, ok)
	}
	if w.TopK != nil {
		b = strconv.AppendInt(append(b, `,"top_k":`...), *w.TopK, 10)
	}
	if w.Stream != nil {
		b = strconv.AppendBool(append(b, `,"stream":`...), *w.Stream)
	}
	if w.Metadata != nil {
		b = append(b, `,"metadata":{`...)
		if w.Metadata.UserID != "" {
			b, ok = appendPlain(append(b, `"user_id":`...), w.Metadata.UserID, ok)
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendTexts writes content blocks that are all plain text blocks, as ContentBlock's
// MarshalJSON writes them ({"type":"text","text":…}); nil is null, as for any slice.
func appendTexts(b []byte, c mw.Content, ok bool) ([]byte, bool) {
	if c == nil {
		return append(b, "null"...), ok
	}
	b = append(b, '[')
	for i := range c {
		blk := &c[i]
		if blk.Type != mw.BlockText || len(blk.Citations) > 0 || len(blk.CacheControl) > 0 {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b, ok = appendPlain(append(b, `{"type":"text","text":`...), blk.Text, ok)
		b = append(b, '}')
	}
	return append(b, ']'), ok
}

// appendPlain writes s as a JSON string where json.Marshal writes it the same way with or
// without HTML escaping (no <, > or &: jsontext.AppendString escapes everything else as it
// does); ok false otherwise.
func appendPlain(b []byte, s string, ok bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if htmlBytes[s[i]] { // a loop of its own: strings.ContainsAny's setup cost more than the scan
			return b, false
		}
	}
	return jsontext.AppendString(b, s), ok
}

// htmlBytes are the bytes json.Marshal escapes for HTML and jsontext.AppendString does not.
var htmlBytes = [256]bool{'<': true, '>': true, '&': true}

// appendFloat writes f as json.Marshal does where that is strconv's 'f' form (0, or an
// absolute value in [1e-6, 1e21)); ok false for the exponent form, NaN and the infinities.
func appendFloat(b []byte, f float64, ok bool) ([]byte, bool) {
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21 || math.IsNaN(f)) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), ok
}
