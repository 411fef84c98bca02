package anthropic

import (
	"unicode/utf8"

	"modelgateway/core/provider"
	mw "modelgateway/core/wire/messageswire"
)

// message_start and message_delta as the API and the simulator write them — compact JSON, plain
// strings and integers — are read here, by a byte cursor, before readStreamEvent's tokenizer
// (whose name sets and token states made these two events cost more than all of a 20-word
// answer's deltas). The subset it accepts is one that encoding/json reads the same way: no
// whitespace, keys of [a-z0-9_] only (a key that is no field then cannot match one by case
// folding), no key of a field twice (encoding/json would keep the last), strings without
// escapes or control characters in valid UTF-8 (copied as they are), integers without
// fraction or exponent, and for the keys it does not know only null, an integer, a string or
// a flat object of those. Anything else is left to readStreamEvent's tokenizer (ok false).

// cursor reads data from i on; a failed read sets bad, and every later read fails too.
type cursor struct {
	data []byte
	i    int
	bad  bool
	// strs is room for the strings stringPtr points to; text, when set, keeps the strings
	// that are no known word (the message id, the model) in a stream's text block. Either
	// saves an allocation per string.
	strs []string
	text *provider.Deltas
}

func (c *cursor) byte(b byte) bool {
	if c.bad || c.i >= len(c.data) || c.data[c.i] != b {
		c.bad = true
		return false
	}
	c.i++
	return true
}

func (c *cursor) peek() byte {
	if c.bad || c.i >= len(c.data) {
		return 0
	}
	return c.data[c.i]
}

func (c *cursor) null() bool {
	if string(c.data[c.i:min(c.i+4, len(c.data))]) == "null" && !c.bad {
		c.i += 4
		return true
	}
	return false
}

// key reads a member's name and its colon: [a-z0-9_]+ only.
func (c *cursor) key() []byte {
	if !c.byte('"') {
		return nil
	}
	start, i := c.i, c.i
	for i < len(c.data) && keyBytes[c.data[i]] {
		i++
	}
	c.i = i
	k := c.data[start:i]
	if len(k) == 0 || !c.byte('"') || !c.byte(':') {
		c.bad = true
		return nil
	}
	return k
}

// quotedKey reads "k": when it is next (k is a known key, [a-z0-9_]+ as key requires), as
// key would read it; else it reads nothing.
func (c *cursor) quotedKey(k string) bool {
	i := c.i
	if c.bad || len(c.data)-i < len(k)+3 || c.data[i] != '"' || string(c.data[i+1:i+1+len(k)]) != k ||
		c.data[i+1+len(k)] != '"' || c.data[i+2+len(k)] != ':' {
		return false
	}
	c.i = i + len(k) + 3
	return true
}

// str reads a string without escapes or control characters, in valid UTF-8.
func (c *cursor) str() []byte {
	if !c.byte('"') {
		return nil
	}
	start, i, ascii := c.i, c.i, true
	for i < len(c.data) {
		b := c.data[i]
		if plainBytes[b] {
			i++
			continue
		}
		if b < 0x80 { // '"' ends the string; a backslash or a control character fails below
			break
		}
		ascii = false
		i++
	}
	c.i = i
	s := c.data[start:i]
	if !c.byte('"') || !ascii && !utf8.Valid(s) {
		c.bad = true
		return nil
	}
	return s
}

// keyBytes are the bytes of a key ([a-z0-9_]); plainBytes those a string holds as they are
// (printable ASCII but '"' and '\\'). A table look per byte, not a chain of comparisons:
// message_start's keys and strings are most of its bytes.
var keyBytes, plainBytes = func() (key, plain [256]bool) {
	for b := range 256 {
		key[b] = b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_'
		plain[b] = b >= 0x20 && b < 0x80 && b != '"' && b != '\\'
	}
	return key, plain
}()

// integer reads an integer of at most 18 digits (no overflow), with no fraction or exponent.
func (c *cursor) integer() int64 {
	neg := c.peek() == '-'
	if neg {
		c.i++
	}
	start := c.i
	var n int64
	for c.i < len(c.data) && c.i-start < 19 {
		b := c.data[c.i]
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int64(b-'0')
		c.i++
	}
	digits := c.i - start
	if c.bad || digits == 0 || digits > 18 || digits > 1 && c.data[start] == '0' {
		c.bad = true
		return 0
	}
	// What follows an integer here is a comma or a closing brace; '.', 'e' or more digits
	// would make it another number.
	if b := c.peek(); b != ',' && b != '}' {
		c.bad = true
		return 0
	}
	if neg {
		n = -n
	}
	return n
}

// object reads {"key":value,...}, calling member at each value with the key's index in
// known (-1 for another key), which reads the value. A known key twice fails.
func (c *cursor) object(known []string, member func(k int) bool) bool {
	if !c.byte('{') {
		return false
	}
	if c.peek() == '}' {
		c.i++
		return true
	}
	var seen uint32
	// guess is the key expected next, the one after the last known one in known's order (the
	// API's): one compare of the quoted key where reading the key and looking it up in known
	// cost several times that. Anything else is read by key, as before.
	guess := 0
	for {
		i := -1
		if guess < len(known) && c.quotedKey(known[guess]) {
			i = guess
		} else {
			k := c.key()
			if c.bad {
				return false
			}
			for j := range known {
				if known[j] == string(k) {
					i = j
					break
				}
			}
		}
		if i >= 0 {
			if seen&(1<<i) != 0 {
				c.bad = true
				return false
			}
			seen |= 1 << i
			guess = i + 1
		}
		if !member(i) || c.bad {
			c.bad = true
			return false
		}
		if c.peek() == '}' {
			c.i++
			return true
		}
		if !c.byte(',') {
			return false
		}
	}
}

// skip reads the value of a key nobody reads: null, an integer, a string, or a flat object
// of those.
func (c *cursor) skip(flat bool) bool {
	switch b := c.peek(); {
	case b == 'n':
		return c.null()
	case b == '"':
		c.str()
	case b == '-' || b >= '0' && b <= '9':
		c.integer()
	case b == '{' && flat:
		return c.object(nil, func(int) bool { return c.skip(false) })
	default:
		c.bad = true
	}
	return !c.bad
}

// intPtr reads an integer or null into *dst (nil for null), with room from *room.
func (c *cursor) intPtr(dst **int64, room *[]int64) bool {
	if c.null() {
		*dst = nil
		return true
	}
	n := c.integer()
	r := *room
	r[0] = n
	*dst, *room = &r[0], r[1:]
	return !c.bad
}

// stringPtr reads a string or null into *dst (nil for null).
func (c *cursor) stringPtr(dst **string) bool {
	if c.null() {
		*dst = nil
		return true
	}
	s := c.str()
	if c.bad {
		return false
	}
	if len(c.strs) > 0 {
		c.strs[0] = c.word(s)
		*dst, c.strs = &c.strs[0], c.strs[1:]
		return true
	}
	w := c.word(s)
	*dst = &w
	return true
}

// word is s as a string: the words every stream repeats cost no allocation, and any other
// comes from the cursor's text block where it has one.
func (c *cursor) word(s []byte) string {
	if w := knownWord(s); w != "" {
		return w
	}
	if c.text == nil {
		return string(s)
	}
	return c.text.String(s)
}

// stringField reads a string into *dst; null leaves it as it is.
func (c *cursor) stringField(dst *string) bool {
	if c.null() {
		return true
	}
	s := c.str()
	*dst = c.word(s)
	return !c.bad
}

// knownWord is s as one of the words every stream repeats, "" when it is none of them.
func knownWord(s []byte) string {
	switch string(s) {
	case mw.EventMessageStart:
		return mw.EventMessageStart
	case mw.EventMessageDelta:
		return mw.EventMessageDelta
	case "message":
		return "message"
	case "assistant":
		return "assistant"
	case mw.StopEndTurn:
		return mw.StopEndTurn
	case mw.StopMaxTokens:
		return mw.StopMaxTokens
	case mw.StopToolUse:
		return mw.StopToolUse
	case "standard":
		return "standard"
	}
	return ""
}

// compactEvent is the event and the room its fields point into, in one allocation.
type compactEvent struct {
	msg   mw.Message
	delta mw.Delta
	usage mw.Usage
	ints  [8]int64  // the counts of two usage objects (message's and the event's), 4 each
	strs  [4]string // stop_reason and stop_sequence, of the message and of the delta
}

// readCompactEvent reads message_start and message_delta in the subset above.
func readCompactEvent(data []byte) (se mw.StreamEvent, ok bool) {
	return readCompactEventIn(data, nil, nil)
}

// readCompactEventIn is readCompactEvent with the event's fields in x (nil: a new one),
// which it clears first, and its strings other than the known words in text's block (nil:
// strings of their own); what it returns points into x.
func readCompactEventIn(data []byte, x *compactEvent, text *provider.Deltas) (se mw.StreamEvent, ok bool) {
	if len(data) > maxFastEvent {
		return se, false
	}
	if x == nil {
		x = new(compactEvent)
	} else {
		*x = compactEvent{}
	}
	c := &cursor{data: data, strs: x.strs[:], text: text}
	ints := x.ints[:]
	ok = c.object(eventKeys, func(k int) bool {
		switch k {
		case 0: // type
			return c.stringField(&se.Type)
		case 1: // message
			if c.null() {
				return true
			}
			se.Message = &x.msg
			return c.message(&x.msg, &ints)
		case 4: // delta
			if c.null() {
				return true
			}
			se.Delta = &x.delta
			return c.delta(&x.delta)
		case 5: // usage
			if c.null() {
				return true
			}
			se.Usage = &x.usage
			return c.usage(&x.usage, &ints)
		case -1:
			return c.skip(true)
		}
		return false // index, content_block, error: the general decoder's
	})
	return se, ok && !c.bad && c.i == len(data)
}

func (c *cursor) message(m *mw.Message, ints *[]int64) bool {
	return c.object(messageKeys, func(k int) bool {
		switch k {
		case 0:
			return c.stringField(&m.ID)
		case 1:
			return c.stringField(&m.Type)
		case 2:
			return c.stringField(&m.Role)
		case 3:
			return c.stringField(&m.Model)
		case 4: // content: message_start's is empty
			if c.null() {
				return true
			}
			if !c.byte('[') || !c.byte(']') {
				return false
			}
			m.Content = []mw.ContentBlock{}
			return true
		case 5:
			return c.stringPtr(&m.StopReason)
		case 6:
			return c.stringPtr(&m.StopSequence)
		case 7:
			return c.null() || c.usage(&m.Usage, ints)
		}
		return c.skip(true)
	})
}

func (c *cursor) delta(d *mw.Delta) bool {
	return c.object(deltaKeys, func(k int) bool {
		switch k {
		case 0:
			return c.stringField(&d.Type)
		case 1:
			return c.stringField(&d.Text)
		case 2:
			return c.stringField(&d.PartialJSON)
		case 3:
			return c.stringField(&d.Thinking)
		case 4:
			return c.stringField(&d.Signature)
		case 5:
			return c.stringPtr(&d.StopReason)
		case 6:
			return c.stringPtr(&d.StopSequence)
		}
		return c.skip(true)
	})
}

// usage reads a usage object. Each count key is read once per object (object refuses a
// second), and an event has at most one usage with counts: ints has room for them.
func (c *cursor) usage(u *mw.Usage, ints *[]int64) bool {
	if len(*ints) < 4 {
		c.bad = true
		return false
	}
	return c.object(usageKeys, func(k int) bool {
		switch k {
		case 0:
			return c.intPtr(&u.InputTokens, ints)
		case 1:
			return c.intPtr(&u.CacheCreationInputTokens, ints)
		case 2:
			return c.intPtr(&u.CacheReadInputTokens, ints)
		case 3:
			return c.intPtr(&u.OutputTokens, ints)
		case 4: // output_tokens_details
			if c.null() {
				u.OutputTokensDetails = nil
				return true
			}
			d := new(mw.OutputTokensDetails)
			u.OutputTokensDetails = d
			return c.object(detailsKeys, func(k int) bool {
				if k == -1 {
					return c.skip(false)
				}
				if c.null() {
					return true
				}
				d.ThinkingTokens = c.integer()
				return !c.bad
			})
		case 5:
			return c.stringField(&u.ServiceTier)
		}
		return c.skip(true)
	})
}
