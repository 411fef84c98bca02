package openai

import (
	"bytes"
	"io"
	"testing"
)

// A short passthrough stream (a role chunk, three words, the finish and usage chunks) costs
// one allocation (the stream, its decoder, its Start and its renamed chunks' buffer): each
// chunk renamed and passed on as it came, lent with its event, the usage read in place.
func TestPassStreamIsOneAllocation(t *testing.T) {
	body := []byte(`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[{"index":0,"delta":{"content":"one"},"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[{"index":0,"delta":{"content":" two"},"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[{"index":0,"delta":{"content":" three"},"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","model":"up-gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n" +
		"data: [DONE]\n\n")
	want := bytes.ReplaceAll(body, []byte(`"up-gpt"`), []byte(`"bench-gpt"`))
	r := bytes.NewReader(nil)
	rc := io.NopCloser(r)
	var got bytes.Buffer
	read := func() {
		r.Reset(body)
		got.Reset()
		s, start := passStream(rc, "up-gpt", "bench-gpt")
		start.Passthrough = true
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := ev.GetNative(); n != nil {
				got.WriteString("data: ")
				got.Write(n.GetData())
				got.WriteString("\n\n")
			}
		}
		if u := s.Usage(); u.Input != 5 || u.Output != 3 {
			t.Fatalf("usage %+v", u)
		}
		s.Close()
	}
	read()
	if got.String()+"data: [DONE]\n\n" != string(want) {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want)
	}
	if raceDetector {
		return // allocation counts are the race detector's (race_test.go)
	}
	if n := testing.AllocsPerRun(100, read); n != 1 {
		t.Fatalf("%v allocations per stream, want 1", n)
	}
}
