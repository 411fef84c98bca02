package simulator

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestChunksConcatenateBackToTheText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"a b  c", []string{"a", " b", "  c"}},
		{" lead\nnew line ", []string{" lead", "\nnew", " line", " "}},
		{"héllo wörld", []string{"héllo", " wörld"}},
	}
	for _, tc := range cases {
		got := chunks(tc.text)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("chunks(%q) (-want +got):\n%s", tc.text, diff)
		}
		if strings.Join(got, "") != tc.text {
			t.Errorf("chunks(%q) do not concatenate back", tc.text)
		}
	}
}

func TestFragmentsSplitOnRuneBoundaries(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`{}`, `{"city":"sim"}`, `{"é":"ü€"}`, `x`} {
		fs := fragments(s, 3)
		if strings.Join(fs, "") != s || len(fs) > 3 || len(fs) == 0 {
			t.Errorf("fragments(%q) = %q", s, fs)
		}
		for _, f := range fs {
			if !json.Valid([]byte(`"`+strings.ReplaceAll(f, `"`, `\"`)+`"`)) || f == "" {
				t.Errorf("fragment %q of %q splits a rune", f, s)
			}
		}
	}
}

func TestArgsFollowTheRequiredProperties(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema, want string }{
		{"no schema", ``, `{}`},
		{"nothing required", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{}`},
		{"scalars in required order", `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"}},"required":["b","s","i","n"]}`,
			`{"b":true,"s":"sim","i":1,"n":1}`},
		{"enum and const", `{"properties":{"u":{"type":"string","enum":["C","F"]},"k":{"const":7}},"required":["u","k"]}`, `{"u":"C","k":7}`},
		{"nested object and array", `{"properties":{"o":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]},"l":{"type":"array","items":{"type":"string"}}},"required":["o","l"]}`,
			`{"o":{"x":1},"l":[]}`},
		{"type list and anyOf", `{"properties":{"t":{"type":["null","integer"]},"a":{"anyOf":[{"type":"boolean"},{"type":"string"}]}},"required":["t","a"]}`, `{"t":1,"a":true}`},
		{"Gemini upper-case types", `{"type":"OBJECT","properties":{"c":{"type":"STRING"},"d":{"type":"INTEGER"}},"required":["c","d"]}`, `{"c":"sim","d":1}`},
		{"required but undeclared", `{"required":["ghost"]}`, `{"ghost":"sim"}`},
	}
	for _, tc := range cases {
		if got := argsFor(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestParseDirectives(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text string
		want directives
	}{
		{"plain text", directives{}},
		{"#sim:fail=503", directives{fail: 503}},
		{"please #sim:fail=429.", directives{fail: 429}},
		{"#sim:fail=200 #sim:fail=abc", directives{}},
		{"#sim:cut", directives{cut: true}},
		{"#sim:cut=eof", directives{cut: true, cutEOF: true}},
		{"#sim:stall=2s #sim:delay=150ms", directives{stall: 2 * time.Second, delay: 150 * time.Millisecond}},
		{"#sim:stall=soon", directives{}},
		{"#sim:cache=12 #sim:think #sim:words=3", directives{cache: 12, think: true, words: 3}},
		{"#sim:error-mid", directives{errorMid: "1"}},
		{"#sim:error-mid=failed", directives{errorMid: "failed"}},
		{"#sim:unknown=1 #sim:cut", directives{cut: true}},
		{"#sim:audio #sim:close=4001", directives{audio: true, close: 4001}},
		{"#sim:close=1006 #sim:close=999", directives{}}, // reserved and impossible codes
		{"#sim:flag", directives{flag: "violence"}},
		{"#sim:flag=self-harm/intent.", directives{flag: "self-harm/intent"}},
		{"#sim:input=1000", directives{input: 1000}},
		{"#sim:input=0 #sim:input=x", directives{}},
		{"#sim:response-id=resp_dup", directives{respID: "resp_dup"}},
	}
	for _, tc := range cases {
		if got := parseDirectives(tc.text); got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.text, got, tc.want)
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	c := &convo{}
	c.user("same question")
	a, b := plan(c, 12), plan(c, 12)
	if a.textString() != b.textString() || a.id != b.id {
		t.Error("the same request got different answers")
	}
	c2 := &convo{}
	c2.user("other question")
	if plan(c2, 12).textString() == a.textString() {
		t.Error("different questions got the same answer")
	}
	if got := len(plan(c, 3).text); got != 3 {
		t.Errorf("%d chunks for 3 words", got)
	}
	// The budget goes to thinking first.
	c.user("#sim:think")
	c.limit = 2
	if p := plan(c, 12); len(p.reasoning) != 2 || len(p.text) != 0 || !p.truncated {
		t.Errorf("limited thinking: %d reasoning, %d text, truncated %v", len(p.reasoning), len(p.text), p.truncated)
	}
	// A tool result ends the tool loop even with tools declared.
	c3 := &convo{}
	c3.tool("f", nil)
	c3.user("go")
	if plan(c3, 12).tool == nil {
		t.Error("no tool call although a tool is declared")
	}
	c3.toolResult("42")
	if p := plan(c3, 12); p.tool != nil || !strings.Contains(p.textString(), `"42"`) {
		t.Errorf("after the result: tool %v, text %q", p.tool, p.textString())
	}
}

func TestVectorsAreDeterministicUnitVectors(t *testing.T) {
	t.Parallel()
	v := vector("text", 0)
	if len(v) != defaultDims || len(vector("text", 3)) != 3 {
		t.Fatalf("dims %d", len(v))
	}
	var norm float64
	for _, f := range v {
		norm += float64(f) * float64(f)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("norm %v", norm)
	}
	if !cmp.Equal(v, vector("text", 8)) || cmp.Equal(v, vector("other", 8)) {
		t.Error("vectors are not a function of the text")
	}
}

func TestGeminiPath(t *testing.T) {
	t.Parallel()
	cases := []struct{ path, model, method string }{
		{"/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", "generateContent"},
		{"/v1/models/m:countTokens", "m", "countTokens"},
		{"/v1beta/models/:x", "", ""},
		{"/v1beta/models/m", "", ""},
		{"/v1/chat/completions", "", ""},
	}
	for _, tc := range cases {
		m, meth, _ := geminiPath(tc.path)
		if m != tc.model || meth != tc.method {
			t.Errorf("%s: %q %q", tc.path, m, meth)
		}
	}
}
