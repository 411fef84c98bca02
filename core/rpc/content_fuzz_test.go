package rpc

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// threadCPU is the calling thread's CPU time in nanoseconds (user and system).
func threadCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// contentBytes jumps from quote to quote; these are the byte-by-byte scanners it replaced,
// the reference it must agree with on every input: a count that differs would bound an
// answer's output differently from what the client reads in it.

func contentBytesRef(data []byte) int64 {
	var n int64
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end := stringEndRef(data, i)
		if end < 0 {
			return n + int64(len(data)-i)
		}
		colon := skipSpace(data, end)
		if colon >= len(data) || data[colon] != ':' {
			i = end - 1 // a value no content member owns
			continue
		}
		name := data[i+1 : end-1]
		i = colon
		if !contentKeyRef(name) {
			continue
		}
		v := skipSpace(data, colon+1)
		switch {
		case v >= len(data):
		case data[v] == '"':
			e := stringEndRef(data, v)
			if e < 0 {
				return n + int64(len(data)-v)
			}
			n += int64(e - v - 2)
			i = e - 1
		case (data[v] == '{' || data[v] == '[') && wholeValue(name):
			e := valueEndRef(data, v)
			if e < 0 {
				return n + int64(len(data)-v)
			}
			n += int64(e - v)
			i = e - 1
		}
	}
	return n
}
func stringEndRef(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
func valueEndRef(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			e := stringEndRef(data, j)
			if e < 0 {
				return -1
			}
			j = e - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}

// contentSeeds are chunks of every passthrough protocol and adversarial JSON: escaped quotes
// and runs of backslashes before quotes, keys spelled inside strings, nested and repeated
// content members, whole values holding brackets in strings, and JSON that does not close.
var contentSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" alpha"},"finish_reason":null}],"usage":null}`,
	`{"choices":[{"delta":{"content":"a\"b\u00e9"}}]}`,
	`{"choices":[{"delta":{"content":"a\\"}},{"delta":{"content":"\\\"x\\\\"}}]}`,
	`{"choices":[{"delta":{"content":"\\\\\\\\\"","text":"\\"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"get","arguments":"{\"ci"}}]}}]}`,
	`{"x":"\"content\":\"hidden\"","content":"seen"}`,
	`{"note":"\\","content":"after an escaped backslash"}`,
	`{"content" : "spaced" , "text"` + "\t:\n" + `"tabs"}`,
	`{"content":"one","content":"two","delta":{"content":{"content":"nested"}}}`,
	`{"args":{"city":"Pa}ris\"]","n":[1,{"a":"}"}]},"input":[{"x":"]"}],"arguments":{}}`,
	`{"args":{"unclosed":"x"`,
	`{"content":"unclosed \"`,
	`{"content":`,
	`{"content"`,
	`"content":"\`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get","args":{"city":"Paris"}}}]}}]}`,
	`{"usage":{"completion_tokens":5},"model":"x\",\"content\":\"y"}`,
	``, `"`, `\"`, `""`, `"":`, `"\\"`, `{"\\":"\\\""}`,
}

func TestContentBytesAgreesWithTheByteScan(t *testing.T) {
	for _, s := range contentSeeds {
		if got, want := contentBytes([]byte(s)), contentBytesRef([]byte(s)); got != want {
			t.Errorf("%s: %d, the byte scan counts %d", s, got, want)
		}
	}
	// Every prefix of every seed: a chunk cut anywhere, an escape or a string left open.
	for _, s := range contentSeeds {
		for n := range len(s) {
			if got, want := contentBytes([]byte(s[:n])), contentBytesRef([]byte(s[:n])); got != want {
				t.Fatalf("%q: %d, the byte scan counts %d", s[:n], got, want)
			}
		}
	}
}

// FuzzContentBytes: on arbitrary bytes, the quote-to-quote scan counts what the byte scan
// counts, and each closing quote it finds is the byte scan's.
//
//	go test -run x -fuzz FuzzContentBytes -fuzztime 20000x ./core/rpc/
func FuzzContentBytes(f *testing.F) {
	for _, s := range contentSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat(`\`, 17) + `"content":"` + strings.Repeat(`\\`, 9) + `"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := contentBytes(data), contentBytesRef(data); got != want {
			t.Fatalf("%q: %d, the byte scan counts %d", data, got, want)
		}
		for i, c := range data {
			if c == '"' {
				if got, want := stringEnd(data, i), stringEndRef(data, i); got != want {
					t.Fatalf("%q at %d: string ends at %d, the byte scan says %d", data, i, got, want)
				}
			}
		}
	})
}

// BenchmarkContentBytes: the byte scan and the one that replaced it, on a chat chunk.
//
//	go test -run x -bench ContentBytes ./core/rpc/
func BenchmarkContentBytes(b *testing.B) {
	data := []byte(contentSeeds[0])
	for _, c := range []struct {
		name string
		f    func([]byte) int64
	}{{"bytewise", contentBytesRef}, {"stops", contentBytes}} {
		b.Run(c.name, func(b *testing.B) {
			// CPU time, not wall time: the machine is shared, and a wall clock counts the
			// time other processes had the core.
			runtime.LockOSThread() // the thread's clock is the benchmark's
			defer runtime.UnlockOSThread()
			c0 := threadCPU()
			for b.Loop() {
				if c.f(data) != 6 {
					b.Fatal("wrong count")
				}
			}
			b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
func contentKeyRef(name []byte) bool {
	switch string(name) { // compiled to a search on length and bytes: no allocation, no hash
	case "content", "text", "delta", "arguments", "name", "refusal", "reasoning", "reasoning_content",
		"transcript", "partial_json", "thinking", "signature", "data", "thoughtSignature", "args", "input",
		"partial_image_b64":
		return true
	}
	return false
}
