package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// goldenClients are raw requests in each client protocol; the answers are recorded whole, with
// only ids and times masked, so that any change of the wire shape shows up in review.
var goldenClients = []struct {
	name    string
	path    func(model string, stream bool) string
	headers map[string]string
	body    func(model string, stream bool) string
}{
	{"chat", func(string, bool) string { return "/v1/chat/completions" }, nil, func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}]}`, m, s)
	}},
	{"responses", func(string, bool) string { return "/v1/responses" }, nil, func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"instructions":"Be brief.","input":"Say hello"}`, m, s)
	}},
	{"messages", func(string, bool) string { return "/v1/messages" }, map[string]string{"anthropic-version": "2023-06-01"}, func(m string, s bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":200,"system":"Be brief.","messages":[{"role":"user","content":"Say hello"}]}`, m, s)
	}},
	{"gemini", func(m string, s bool) string {
		if s {
			return "/v1beta/models/" + m + ":streamGenerateContent?alt=sse"
		}
		return "/v1beta/models/" + m + ":generateContent"
	}, nil, func(string, bool) string {
		return `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"Say hello"}]}]}`
	}},
}

var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(id|responseId|item_id|call_id)":"[^"]*"`), `"$1":"<id>"`},
	{regexp.MustCompile(`"(created|created_at|completed_at)":\d+`), `"$1":0`},
	{regexp.MustCompile(`"(createTime)":"[^"]*"`), `"$1":"<time>"`},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// Golden transcripts per (client protocol × upstream kind × stream or not), as the client sees
// them on the wire.
func TestGoldenTranscripts(t *testing.T) {
	g := startGen(t)
	for _, c := range goldenClients {
		for _, up := range upstreamKinds {
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s-%s-%s", c.name, up.kind, map[bool]string{false: "json", true: "stream"}[stream])
				t.Run(name, func(t *testing.T) {
					status, hdr, raw := g.post(t, c.path(up.model, stream), c.headers, c.body(up.model, stream))
					got := fmt.Sprintf("HTTP %d\nContent-Type: %s\n\n%s", status, hdr.Get("Content-Type"), mask(string(raw)))
					file := filepath.Join("testdata", "golden", name+".txt")
					if *update {
						if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
							t.Fatal(err)
						}
						return
					}
					want, err := os.ReadFile(file)
					if err != nil {
						t.Fatalf("%v (run with -update to create)", err)
					}
					if got != string(want) {
						t.Errorf("transcript differs from %s:\n--- got\n%s\n--- want\n%s", file, got, want)
					}
					if !strings.HasPrefix(got, "HTTP 200") {
						t.Errorf("status: %s", got)
					}
				})
			}
		}
	}
}
