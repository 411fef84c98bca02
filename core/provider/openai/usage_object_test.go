package openai

import "testing"

// usageObject must see every usage object gjson would find, and may skip the nulls.
func TestUsageObject(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"choices":[],"usage":{"prompt_tokens":1}}`:                     true,
		`{"choices":[],"usage" :  {"prompt_tokens":1}}`:                  true,
		"{\"usage\"\n:\t{}}":                                             true,
		`{"x":{"usage":null},"usage":{"prompt_tokens":1}}`:               true,
		`{"usage":{"prompt_tokens":1},"x":{"usage":null}}`:               true,
		`{"id":"c","choices":[{"delta":{"content":"hi"}}],"usage":null}`: false,
		`{"choices":[{"delta":{"content":"\"usage\":{"}}],"usage":null}`: false,
		`{"choices":[{"delta":{"content":"usage"}}]}`:                    false,
		`{"usage":"{"}`: false,
		`{"usage"::{}}`: false,
		`{"usage"{:{}}`: false,
		`{"usage":`:     false,
		`{"usage"`:      false,
	} {
		if got := usageObject([]byte(data)); got != want {
			t.Errorf("%s: %v, want %v", data, got, want)
		}
	}
}
