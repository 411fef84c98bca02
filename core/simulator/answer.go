package simulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// convo is what every protocol's request reduces to: enough to pick and size the answer.
// Protocol parsers feed it turn by turn, in order.
type convo struct {
	textBytes int      // bytes of all text the request carries, the basis of the token count
	lastUser  string   // the last non-empty user text: the seed and the directives
	last      turnKind // kind of the last turn
	result    string   // text of the last tool result
	tools     []toolDecl
	choice    string          // "", "auto", "required" or "none"
	forced    string          // tool name that tool_choice forces
	limit     int             // output token limit, 0 for none
	jsonOut   bool            // the client asked for JSON (structured.go)
	schema    json.RawMessage // the schema it must validate against; nil for any object
	marks     []prefixMark    // the starts of the prompt, for the prefix cache
}

type turnKind int

const (
	turnNone turnKind = iota
	turnUser
	turnAssistant
	turnTool
)

type toolDecl struct {
	name   string
	schema json.RawMessage
}

// count adds text that is part of the prompt without being a turn of its own; each text
// ends a start of the prompt a prefix cache may hold (Options.PrefixCache).
func (c *convo) count(s string) {
	c.textBytes += len(s)
	h := uint64(14695981039346656037)
	if n := len(c.marks); n > 0 {
		h = c.marks[n-1].hash
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	h = (h ^ 0xff) * 1099511628211 // the boundary between texts
	c.marks = append(c.marks, prefixMark{c.textBytes, h})
}

// prefixMark is a start of the prompt: its length in bytes and its hash.
type prefixMark struct {
	bytes int
	hash  uint64
}

func (c *convo) system(text string) { c.count(text) }

func (c *convo) user(text string) {
	c.count(text)
	if strings.TrimSpace(text) != "" {
		c.lastUser = text
	}
	c.last = turnUser
}

func (c *convo) assistant(text string) {
	c.count(text)
	c.last = turnAssistant
}

func (c *convo) toolResult(text string) {
	c.count(text)
	c.result = text
	c.last = turnTool
}

// turn adds one message of the conversation: the model's own, or the caller's, whose tool
// results (when it has any) end the turn after any text beside them, which still carries
// directives.
func (c *convo) turn(fromModel bool, text string, results []string) {
	switch {
	case fromModel:
		c.assistant(text)
	case len(results) > 0:
		if text != "" {
			c.user(text)
		}
		c.toolResult(strings.Join(results, "\n"))
	default:
		c.user(text)
	}
}

func (c *convo) tool(name string, schema json.RawMessage) {
	c.count(name)
	c.count(string(schema))
	c.tools = append(c.tools, toolDecl{name, schema})
}

// inputTokens is the simulator's token count: a quarter of the text bytes, rounded up, at least 1.
func (c *convo) inputTokens() int {
	return max(1, (c.textBytes+3)/4)
}

// answer is the planned reply, the same for every protocol.
type answer struct {
	seed      uint32
	id        string // hex seed, the suffix of every id of this reply
	d         directives
	input     int // all input tokens, cached included
	cached    int // the part of input served from cache
	reasoning []string
	text      []string
	tool      *toolCall
	truncated bool // stopped by the output limit
	json      bool // the text is a JSON document
}

type toolCall struct {
	name      string
	args      string   // JSON object text
	fragments []string // args split as a stream sends them
}

func (a *answer) reasoningTokens() int { return len(a.reasoning) }

// output counts every streamed piece as one token, reasoning included.
func (a *answer) output() int {
	n := len(a.reasoning) + len(a.text)
	if a.tool != nil {
		n += len(a.tool.fragments)
	}
	return n
}

func (a *answer) textString() string      { return strings.Join(a.text, "") }
func (a *answer) reasoningString() string { return strings.Join(a.reasoning, "") }

// signature is the opaque thinking signature; base64, as Gemini's bytes field requires.
func (a *answer) signature() string {
	return base64.StdEncoding.EncodeToString([]byte("sim-signature-" + a.id))
}

// wordList is cycled through to build answers.
var wordList = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo
lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu`)

// plan derives the reply from the conversation; words is the default answer length.
func plan(c *convo, words int) *answer {
	d := parseDirectives(c.lastUser)
	seedText := c.lastUser
	if c.last == turnTool {
		seedText += "\x00" + c.result
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(seedText))
	a := &answer{seed: h.Sum32(), d: d, input: c.inputTokens()}
	if d.input > 0 {
		// Usage the request does not show: images, provider-side system prompts, tool preambles.
		a.input = d.input
	}
	a.id = fmt.Sprintf("%08x", a.seed)
	a.cached = min(d.cache, a.input)
	n := a.seed % 1000
	if d.think {
		a.reasoning = chunks(fmt.Sprintf("Simulated thinking about reply %d before answering.", n))
	}
	if t := c.pickTool(); t != nil {
		args := argsFor(t.schema)
		a.tool = &toolCall{name: t.name, args: args, fragments: fragments(args, 3)}
	} else if c.jsonOut {
		doc := jsonDocument(c.schema, a.seed)
		a.text, a.json = fragments(doc, max(1, len(doc)/8)), true
	} else if c.last == turnTool {
		a.text = chunks(fmt.Sprintf("Simulated reply %d: the tool returned \"%s\".", n, c.result))
	} else {
		if d.words > 0 {
			words = d.words
		}
		a.text = chunks(answerWords(a.seed, words))
	}
	if c.limit > 0 {
		budget := c.limit
		if len(a.reasoning) > budget {
			a.reasoning, a.truncated = a.reasoning[:budget], true
		}
		budget -= len(a.reasoning)
		// A tool call or JSON document is never cut: half a JSON object helps no test.
		if a.tool == nil && !a.json && len(a.text) > budget {
			a.text, a.truncated = a.text[:budget], true
		}
	}
	return a
}

// pickTool returns the tool to call, nil when the reply is text: no tools, tool_choice none,
// or the conversation already ends with a tool result.
func (c *convo) pickTool() *toolDecl {
	if len(c.tools) == 0 || c.choice == "none" || c.last == turnTool {
		return nil
	}
	for i := range c.tools {
		if c.tools[i].name == c.forced {
			return &c.tools[i]
		}
	}
	return &c.tools[0]
}

// answerWords is "Simulated reply N: w w w." with words words in all.
func answerWords(seed uint32, words int) string {
	ws := []string{"Simulated", "reply", strconv.Itoa(int(seed%1000)) + ":"}
	for i := 0; len(ws) < words; i++ {
		ws = append(ws, wordList[(int(seed)+i)%len(wordList)])
	}
	ws = ws[:words]
	ws[len(ws)-1] += "."
	return strings.Join(ws, " ")
}

// chunks splits text before each run of whitespace that follows a word, so every chunk is one
// word with its leading space and the chunks concatenate back to text exactly.
func chunks(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if space && inWord {
			out = append(out, text[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// fragments splits s into at most n pieces of similar length on rune boundaries, the way
// streamed tool arguments arrive in several deltas.
func fragments(s string, n int) []string {
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
