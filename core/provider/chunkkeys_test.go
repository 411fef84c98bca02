package provider

import (
	"bytes"
	"testing"
)

// The looks ScanChunk replaced, as they were: bytes.Contains for an error, bytes.Index for the
// model, and the usage object's look (usageObjectRef, passDecoder's until then).
func chunkKeysRef(data []byte) ChunkKeys {
	k := ChunkKeys{Error: bytes.Contains(data, keyError), Usage: anyUsageObject(data), Model: -1}
	if i := bytes.Index(data, keyModelValue); i >= 0 {
		k.Model = i + len(keyModelValue)
	}
	return k
}

// usageObjectRef is the decoder's look for a usage object before ScanChunk. It went on from
// the end of each "usage" key it found, and so missed one whose opening quote is the closing
// quote of the one before (`"usage"usage":{`, not JSON): ScanChunk looks at every one
// (anyUsageObject), and so finds every usage object this did.
func usageObjectRef(data []byte) bool {
	for {
		i := bytes.Index(data, keyUsage)
		if i < 0 {
			return false
		}
		data = data[i+len(keyUsage):]
		colon := false
	value:
		for _, c := range data {
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			case c == ':' && !colon:
				colon = true
			case c == '{' && colon:
				return true
			default:
				break value
			}
		}
	}
}

// anyUsageObject: some `"usage"`, wherever it starts, is followed by an object.
func anyUsageObject(data []byte) bool {
	for i := range data {
		if bytes.HasPrefix(data[i:], keyUsage) && objectValue(data[i+len(keyUsage):]) {
			return true
		}
	}
	return false
}

var chunkKeysSeeds = []string{
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"up-gpt","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" alpha"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"c","model":"up-gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20,"total_tokens":25}}`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"choices":[{"delta":{"content":"\"usage\":{ \"model\":\"x\" \"error\""}}],"usage":null,"model":"m"}`,
	`{"usage" :  {"a":1}, "model" : "spaced", "model":"second"}`,
	`{"us\u0061ge":{},"\u0065rror":{},"model":"`,
	`"usage"usage":{"model":"model":"`,
	`"e"u"m"error"usage"model"`,
	``, `"`, `"m`, `"model":`, `"model":"`,
}

func FuzzScanChunk(f *testing.F) {
	for _, s := range chunkKeysSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := ScanChunk(data), chunkKeysRef(data)
		if got != want {
			t.Fatalf("%q: %+v, the textual looks say %+v", data, got, want)
		}
		if usageObjectRef(data) && !got.Usage {
			t.Fatalf("%q: the old look saw a usage object, ScanChunk none", data)
		}
		// modelValue stops at the model: the same place, whatever follows.
		if m := scanChunk(data, 0, true, nil).Model; m != want.Model {
			t.Fatalf("%q: model at %d alone, %d", data, m, want.Model)
		}
	})
}

// Every seed, and each of its prefixes and suffixes (the scan's eight-byte steps meet the
// keys at every offset and the tail at every length).
func TestScanChunkIsTheTextualLooks(t *testing.T) {
	t.Parallel()
	for _, s := range chunkKeysSeeds {
		for i := range len(s) + 1 {
			for _, data := range []string{s[:i], s[i:], "  " + s[i:]} {
				if got, want := ScanChunk([]byte(data)), chunkKeysRef([]byte(data)); got != want {
					t.Fatalf("%q: %+v, want %+v", data, got, want)
				}
			}
		}
	}
	for data, want := range map[string]ChunkKeys{
		chunkKeysSeeds[0]:                   {Model: 107},
		chunkKeysSeeds[1]:                   {Usage: true, Model: 19},
		chunkKeysSeeds[2]:                   {Error: true, Model: -1},
		chunkKeysSeeds[3]:                   {Model: 97},
		`{"us\u0061ge":{},"\u0065rror":{}}`: {Model: -1}, // escaped: not seen here (nor before)
	} {
		if got := ScanChunk([]byte(data)); got != want {
			t.Errorf("%s: %+v, want %+v", data, got, want)
		}
	}
}

// BenchmarkScanChunk: the three looks of a chat chunk, as they were and in one pass.
//
//	go test -run x -bench ScanChunk ./core/provider/
func BenchmarkScanChunk(b *testing.B) {
	data := []byte(chunkKeysSeeds[0])
	b.Run("textual", func(b *testing.B) {
		for b.Loop() {
			if bytes.Contains(data, keyError) || usageObjectRef(data) || bytes.Index(data, keyModelValue) < 0 {
				b.Fatal("wrong keys")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if k := ScanChunk(data); k.Error || k.Usage || k.Model < 0 {
				b.Fatal("wrong keys")
			}
		}
	})
}
