// Package tokens counts input tokens locally, for the count-token routes
// (/v1/messages/count_tokens, :countTokens) when the upstream cannot count.
//
// The count is an estimate: it uses OpenAI's o200k_base byte-pair encoding, which is a real
// tokenizer but not the upstream model's own (Claude and Gemini do not publish theirs). It is
// close enough for budgeting and for clients that size their prompts, and it never needs the
// network: the vocabulary is compiled into the binary by github.com/tiktoken-go/tokenizer.
package tokens

import (
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// encoding is built on first use, not at program start: building it fills a 200k-entry map
// (about 15-35 ms and 7 MB of heap), which a gateway that never counts locally should not pay. The codec is read-only after construction, so one instance serves every goroutine.
//
// We import the codec package rather than tokenizer.Get: Get references every encoding, so the
// linker would keep all five vocabularies (about 5 MB more binary) for one we use.
var encoding = sync.OnceValue(codec.NewO200kBase)

// CountText is the number of o200k_base tokens in s, special-token text (e.g. "<|endoftext|>")
// counted as ordinary text, as a client's prompt would be.
func CountText(s string) int {
	if s == "" {
		return 0
	}
	n, err := encoding().Count(s)
	if err != nil {
		// The codec only fails when its split regexp fails, which it cannot without a match
		// timeout (none is set). Should that change, a byte-based guess beats a zero that
		// would let an oversized prompt through.
		return estimate(s)
	}
	return n
}

// estimate is the usual rule of thumb of four bytes of English per token, rounded up.
func estimate(s string) int { return (len(s) + 3) / 4 }

// CountTexts is the number of tokens of several inputs measured one by one, as embedding and
// moderation inputs are.
func CountTexts(texts []string) int64 {
	var n int64
	for _, t := range texts {
		n += int64(CountText(t))
	}
	return n
}
