package relay

import (
	"encoding/json"
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
