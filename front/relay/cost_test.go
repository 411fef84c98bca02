package relay

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"
)

func TestAddCostSplicesTheExactDecimal(t *testing.T) {
	t.Parallel()
	cost := &corev1.Usage{Cost: "0.000029", Currency: "RUB"}
	cases := []struct {
		name, doc, path, want string
		u                     *corev1.Usage
	}{
		{"a top-level usage object", `{"prompt_tokens":5}`, "", `{"prompt_tokens":5,"cost":0.000029,"currency":"RUB"}`, cost},
		{"a top-level object with a trailing newline", "{\"a\":1}\n", "", "{\"a\":1,\"cost\":0.000029,\"currency\":\"RUB\"}\n", cost},
		{"a nested usage object", `{"type":"message_delta","usage":{"output_tokens":12},"x":1}`, "usage", `{"type":"message_delta","usage":{"output_tokens":12,"cost":0.000029,"currency":"RUB"},"x":1}`, cost},
		{"a deeper path with spaces", `{"response": {"usage": { "input_tokens": 5 } }}`, "response.usage", `{"response": {"usage": { "input_tokens": 5 ,"cost":0.000029,"currency":"RUB"} }}`, cost},
		{"an empty object", `{"usage":{}}`, "usage", `{"usage":{"cost":0.000029,"currency":"RUB"}}`, cost},
		{"no usage object there: unchanged", `{"usage":null}`, "usage", `{"usage":null}`, cost},
		{"no cost: unchanged", `{"usage":{"a":1}}`, "usage", `{"usage":{"a":1}}`, &corev1.Usage{}},
		{"a cost that is not a plain decimal: unchanged", `{"a":1}`, "", `{"a":1}`, &corev1.Usage{Cost: "1e-5", Currency: "RUB"}},
		{"an integer cost", `{"a":1}`, "", `{"a":1,"cost":12,"currency":"USD"}`, &corev1.Usage{Cost: "12", Currency: "USD"}},
		{"no usage event at all", `{"a":1}`, "", `{"a":1}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := string(AddCost([]byte(c.doc), c.path, c.u))
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
}

func TestPlainDecimal(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0": true, "0.5": true, "12.000000001": true, "-3.25": true,
		"": false, ".5": false, "5.": false, "01": false, "1e5": false, "1.2.3": false, "-": false, "NaN": false,
	} {
		if got := plainDecimal(s); got != want {
			t.Errorf("plainDecimal(%q) = %v, want %v", s, got, want)
		}
	}
}

// A held usage chunk gets its cost where it lies (the room Hold leaves): the bytes AddCost
// makes, and no allocation for the hold and the flush together (the held copy's buffer is
// recycled), where the copy, the slice of held events, the value gjson copied and AddCost's
// copy were four.
func TestTailSplicesTheCostInItsCopy(t *testing.T) {
	cost := &corev1.Usage{Cost: "0.000052", Currency: "RUB"}
	cases := []struct {
		name, path string
		held       []string
		u          *corev1.Usage
	}{
		{"a chat usage chunk", "usage", []string{`{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20}}`}, cost},
		{"an empty usage object", "usage", []string{`{"usage":{}}`}, cost},
		{"a top-level object", "", []string{`{"a":1}`}, cost},
		{"messages' delta and stop", "usage", []string{`{"type":"message_delta","usage":{"output_tokens":3}}`, `{"type":"message_stop"}`}, cost},
		{"a cost longer than the room", "usage", []string{`{"usage":{"a":1}}`}, &corev1.Usage{Cost: "0.0000000000000000000000000000000000000000000000000000000001", Currency: "RUB"}},
		{"a currency that is quoted with escapes", "usage", []string{`{"usage":{"a":1}}`}, &corev1.Usage{Cost: "1", Currency: "R\"B"}},
		{"no cost", "usage", []string{`{"usage":{"a":1}}`}, nil},
		{"no object there", "usage", []string{`{"usage":null}`}, cost},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			for i, h := range c.held {
				if i == 0 {
					want = append(want, string(AddCost([]byte(h), c.path, c.u)))
				} else {
					want = append(want, h)
				}
			}
			var tail Tail
			var got []string
			write := func(_ string, data []byte) error { got = append(got, string(data)); return nil }
			for _, h := range c.held {
				tail.Hold("", []byte(h), c.path)
			}
			if !tail.Holding() {
				t.Fatal("not holding")
			}
			if err := tail.Flush(write, c.u); err != nil {
				t.Fatal(err)
			}
			if tail.Holding() || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
		})
	}
	// The usual case allocates nothing (under the race detector, the pool drops some of
	// what it is given: fewer than one a run all the same).
	data := []byte(cases[0].held[0])
	var tail Tail
	write := func(string, []byte) error { return nil }
	if n := testing.AllocsPerRun(100, func() {
		tail.Hold("", data, "usage")
		_ = tail.Flush(write, cost)
	}); n != 0 {
		t.Fatalf("%v allocations per held chunk, want none", n)
	}
}
