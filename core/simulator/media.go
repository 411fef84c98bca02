package simulator

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strings"
	"unicode"
)

// Helpers shared by the routes that are not conversations: rerank, moderations, images, audio.

// tokensOf is the simulator's token count of a text: a quarter of its bytes, rounded up, at
// least 1, as for conversations.
func tokensOf(s string) int { return max(1, (len(s)+3)/4) }

// mediaAnswer plans the reply of a route whose user text is text: it gives the seed, the id and
// the directives, and begin applies the delays and #sim:fail as on the chat routes.
func mediaAnswer(text string) *answer {
	return plan(&convo{lastUser: text, textBytes: len(text)}, 1)
}

// hash64 is a stable hash of its arguments, for scores and colours.
func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h%1_000_000) / 1_000_000 }

// hashWords picks n words of the word list from the bytes of sum, cycling through them.
func hashWords(sum []byte, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = wordList[int(sum[i%len(sum)]+byte(i))%len(wordList)]
	}
	return out
}

// lowerWords splits text into lower-case words of letters and digits.
func lowerWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// entry is one key of an orderedMap.
type entry[V any] struct {
	key string
	val V
}

// orderedMap is a JSON object whose keys keep the order the real API sends them in.
type orderedMap[V any] []entry[V]

func (m orderedMap[V]) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(e.val)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
