package openai

import (
	"bytes"

	"modelgateway/core/wire/jsontext"
)

// Most chunks of a chat stream carry one content fragment and nothing else:
//
//	{"id":"…","object":"chat.completion.chunk",…,"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}
//
// readContent reads that fragment in place. Anything more (a role, reasoning, tool calls,
// a finish reason, usage, an error, other choices, another key order) takes the general
// decoder. Inside a JSON string a quote is always escaped, so a key such as "usage" found
// by substring search is a key, not text.
var (
	contentHead = []byte(`"choices":[{"index":0,"delta":{"content":`)
	choiceTails = [][]byte{[]byte(`},"logprobs":null,"finish_reason":null}]`), []byte(`},"finish_reason":null}]`)}
	keyUsageObj = []byte(`"usage":{`)
)

func readContent(data []byte) (string, bool) {
	at := indexQuoted(data, contentHead)
	if at < 0 {
		return "", false
	}
	text, next, ok := jsontext.String(data, at+len(contentHead))
	if !ok {
		return "", false
	}
	rest := data[next:]
	tail := -1
	for i, t := range choiceTails {
		if bytes.HasPrefix(rest, t) {
			tail = i
			break
		}
	}
	if tail < 0 {
		return "", false
	}
	rest = rest[len(choiceTails[tail]):]
	for _, part := range [][]byte{data[:at], rest} {
		if indexQuoted(part, keyUsageObj) >= 0 || indexQuoted(part, keyError) >= 0 {
			return "", false
		}
	}
	return text, true
}

// indexQuoted is bytes.Index(b, key) for a key that opens with a quote: the search is for
// the rest of the key, then a look at the byte before it. bytes.Index with a needle that
// opens with a quote stops, in JSON, at every quote before it cuts over (some 200 ns a
// look at a chat chunk; three looks per chunk of a translated stream here).
func indexQuoted(b, key []byte) int {
	rest := key[1:]
	for off := 1; off <= len(b); {
		i := bytes.Index(b[off:], rest)
		if i < 0 {
			return -1
		}
		if b[off+i-1] == key[0] {
			return off + i - 1
		}
		off += i + 1
	}
	return -1
}
