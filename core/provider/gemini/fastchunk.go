package gemini

import (
	"bytes"

	"github.com/tidwall/gjson"

	"modelgateway/core/wire/jsontext"
)

// Most chunks of a stream carry one text part of candidate 0 and the running usage:
//
//	{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"index": 0}],"usageMetadata": {…},"modelVersion": "…","responseId": "…"}
//
// readText reads the text in place, in the API's layout or a compact one. Anything more (a
// finish reason, a thought, a signature, a call, prompt feedback, an error, other
// candidates) takes the general decoder. Inside a JSON string a quote is always escaped, so
// a key found by substring search is a key, not text.
var textLayouts = []struct{ head, tail []byte }{
	{[]byte(`{"candidates": [{"content": {"parts": [{"text": `), []byte(`}],"role": "model"},"index": 0}]`)},
	{[]byte(`{"candidates":[{"content":{"parts":[{"text":`), []byte(`}],"role":"model"},"index":0}]`)},
	{[]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":`), []byte(`}]},"index":0}]`)},
}

var (
	keyUsageMetadata  = []byte(`"usageMetadata"`)
	keyPromptFeedback = []byte(`"promptFeedback"`)
	keyError          = []byte(`"error"`)
)

// readText returns the text and whether the chunk reports usage.
func readText(data []byte) (text string, hasUsage, ok bool) {
	for _, l := range textLayouts {
		if !bytes.HasPrefix(data, l.head) {
			continue
		}
		text, next, ok := jsontext.String(data, len(l.head))
		if !ok {
			return "", false, false
		}
		rest, found := bytes.CutPrefix(data[next:], l.tail)
		if !found || bytes.Contains(rest, keyPromptFeedback) || bytes.Contains(rest, keyError) {
			return "", false, false
		}
		return text, bytes.Contains(rest, keyUsageMetadata), true
	}
	return "", false, false
}

// usageOfChunk is the usageMetadata object of a whole chunk.
func usageOfChunk(data []byte) []byte {
	return []byte(gjson.GetBytes(data, "usageMetadata").Raw)
}
