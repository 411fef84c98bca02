package tokens

import (
	"strings"
	"testing"
)

// The expected counts were checked against two independent o200k_base implementations
// (this library's generated vocabulary and pkoukk/tiktoken-go reading OpenAI's own
// o200k_base.tiktoken file); "hello world" is [24912 2375] in OpenAI's tiktoken.
func TestCountTextKnownStrings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		{"empty string is no tokens", "", 0},
		{"two common words are two tokens", "hello world", 2},
		{"an English sentence", "The quick brown fox jumps over the lazy dog.", 10},
		{"JSON arguments", `{"location":"Paris, France","unit":"celsius"}`, 12},
		{"Japanese", "日本語のテキストです。", 8},
		{"special-token text counts as ordinary text", "<|endoftext|>", 7},
		{"a long rare word is split", "supercalifragilistic", 6},
		{"identifiers and digits", "CamelCaseIdentifier_snake_case123456789", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := CountText(tc.in); got != tc.want {
				t.Errorf("CountText(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// Request strings come from JSON or protobuf and are valid UTF-8; should an invalid byte slip
// through it counts as U+FFFD, as Python tiktoken would see the decoded string, not as nothing.
func TestCountTextInvalidUTF8CountsAsReplacement(t *testing.T) {
	t.Parallel()
	got, want := CountText("ok\xff\xfe"), CountText("ok\uFFFD\uFFFD")
	if got != want || got == 0 {
		t.Errorf("CountText with invalid bytes = %d, with U+FFFD = %d: want equal and positive", got, want)
	}
}

func TestCountTextGrowsWithText(t *testing.T) {
	t.Parallel()
	one := CountText("The quick brown fox jumps over the lazy dog. ")
	hundred := CountText(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100))
	// Repetition merges nothing across sentence boundaries, so the count scales.
	if hundred < 90*one || hundred > 110*one {
		t.Errorf("100 sentences = %d tokens, one = %d: want about 100x", hundred, one)
	}
}

func TestEstimateRoundsUp(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2} {
		if got := estimate(in); got != want {
			t.Errorf("estimate(%q) = %d, want %d", in, got, want)
		}
	}
}
