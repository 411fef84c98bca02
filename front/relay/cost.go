package relay

import (
	"strconv"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// What a streamed answer cost is shown where each protocol's clients read usage, as OpenRouter
// does: "cost", a JSON number written from the exact decimal (no float is involved on our
// side; clients that parse it as a float see the same digits OpenRouter users see), with
// "currency" beside it. Core sets both on the stream's usage event once the charge is known;
// a stream that is not charged shows neither.

// HasCost reports whether the usage event carries a cost to show: a currency and a plain
// decimal, which is then also a valid JSON number.
func HasCost(u *corev1.Usage) bool {
	return u != nil && u.GetCurrency() != "" && plainDecimal(u.GetCost())
}

func plainDecimal(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	digits, dot := 0, -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && dot < 0 && i > 0:
			dot = i
		default:
			return false
		}
	}
	switch {
	case digits == 0 || dot == len(s)-1:
		return false
	case len(s) > 1 && s[0] == '0' && s[1] != '.':
		return false // no leading zeros in JSON
	}
	return true
}

// AddCost sets "cost" and "currency" in the object at path of a JSON document (path "" is the
// document itself); without a cost, or without an object there, the document is unchanged.
// The members are spliced in before the object's closing brace: one copy, no re-encoding.
func AddCost(doc []byte, path string, u *corev1.Usage) []byte {
	return addCost(doc, path, u, false)
}

// addCost is AddCost; inPlace: doc is the caller's own and may be written, and the cost
// goes into its spare capacity when it has room (a held usage chunk: Tail.Hold leaves some),
// instead of into a copy.
func addCost(doc []byte, path string, u *corev1.Usage, inPlace bool) []byte {
	if !HasCost(u) {
		return doc
	}
	end := -1 // index of the object's closing brace
	if path == "" {
		for i := len(doc) - 1; i >= 0; i-- {
			if c := doc[i]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				if c == '}' && gjson.ValidBytes(doc) {
					end = i
				}
				break
			}
		}
	} else if at := getInPlace(doc, path); at.IsObject() && at.Index > 0 {
		end = at.Index + len(at.Raw) - 1
	} else if at.IsObject() {
		return addCostSlow(doc, path, u) // position unknown
	}
	if end < 0 || doc[end] != '}' {
		return doc
	}
	empty := true
	for i := end - 1; i >= 0; i-- {
		if c := doc[i]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			empty = c == '{'
			break
		}
	}
	// The members spliced in: `,"cost":` (the comma unless the object is empty), the cost,
	// `,"currency":` and the quoted currency (ISO codes: ASCII letters, quoted as themselves
	// unless they are not).
	cur := u.GetCurrency()
	n := len(`"cost":`) + len(u.GetCost()) + len(`,"currency":`) + len(cur) + 2
	if !empty {
		n++
	}
	if !inPlace || len(doc)+n > cap(doc) || !plainASCII(cur) {
		out := make([]byte, 0, len(doc)+len(u.GetCost())+len(cur)+24)
		out = append(out, doc[:end]...)
		out = appendCost(out, empty, u)
		return append(out, doc[end:]...)
	}
	out := doc[:len(doc)+n]
	copy(out[end+n:], doc[end:]) // a memmove: the ranges overlap
	appendCost(out[:end:end+n], empty, u)
	return out
}

// appendCost appends the cost members spliced before an object's closing brace.
func appendCost(out []byte, empty bool, u *corev1.Usage) []byte {
	if !empty {
		out = append(out, ',')
	}
	out = append(out, `"cost":`...)
	out = append(out, u.GetCost()...)
	out = append(out, `,"currency":`...)
	return strconv.AppendQuote(out, u.GetCurrency()) // ISO codes: ASCII letters
}

// plainASCII: strconv.AppendQuote writes s as itself between quotes.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// getInPlace is gjson.GetBytes without its copy of the value's text: the result's Raw points
// into doc, and is read before doc changes.
func getInPlace(doc []byte, path string) gjson.Result {
	if len(doc) == 0 {
		return gjson.Result{}
	}
	return gjson.Get(unsafe.String(&doc[0], len(doc)), path)
}

func addCostSlow(doc []byte, path string, u *corev1.Usage) []byte {
	out, err := sjson.SetRawBytes(doc, path+".cost", []byte(u.GetCost()))
	if err != nil {
		return doc
	}
	if out, err = sjson.SetBytes(out, path+".currency", u.GetCurrency()); err != nil {
		return doc
	}
	return out
}

// Tail holds the last events of a passthrough stream, from the one that carries the final
// usage, until core's usage event says what the answer cost; then the cost is spliced into
// the held usage and everything goes out. Events before it pass at once, so nothing but the
// end of the stream waits, and it waits only for the upstream's terminal event.
type Tail struct {
	events []heldEvent
	// path of the usage object inside the first held event's data.
	path string
	// room is events' first backing array: a stream holds one event (chat, content
	// generation) or two (messages' message_delta and message_stop).
	room [2]heldEvent
}

type heldEvent struct {
	name string
	data []byte
	buf  *[]byte // data's buffer, from heldBuffers
}

// heldBuffers recycles the held events' copies: a stream holds its usage chunk from the
// upstream's last chunk until core's usage event (the wait for the durable charge), then
// writes it, and the writers copy what they are given. One grown past heldKept is dropped.
var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

const heldKept = 16 << 10

// Holding reports whether events are being held (the final usage has been seen).
func (t *Tail) Holding() bool { return len(t.events) > 0 }

// costRoom is what a held event's copy has beyond its data: room for the cost members
// (`,"cost":` a decimal `,"currency":"RUB"`), spliced in place at the Flush.
const costRoom = 64

// Hold keeps an event; the first one held must hold the usage object at usagePath.
func (t *Tail) Hold(name string, data []byte, usagePath string) {
	if len(t.events) == 0 {
		t.path = usagePath
		t.events = t.room[:0]
	}
	buf := heldBuffers.Get().(*[]byte)
	own := append((*buf)[:0], data...)
	if cap(own) < len(own)+costRoom {
		own = append(make([]byte, 0, len(data)+costRoom), data...)
	}
	*buf = own
	t.events = append(t.events, heldEvent{name, own, buf})
}

// Flush writes the held events, the cost spliced into the first when u carries one.
func (t *Tail) Flush(write func(name string, data []byte) error, u *corev1.Usage) error {
	events := t.events
	t.events = nil
	for i, ev := range events {
		data := ev.data
		if i == 0 {
			data = addCost(data, t.path, u, true) // the copy is the Tail's own
		}
		if err := write(ev.name, data); err != nil {
			release(events)
			return err
		}
	}
	release(events)
	return nil
}

// release gives the held events' buffers back (write has copied their bytes) and clears
// the events, so that the room keeps nothing alive.
func release(events []heldEvent) {
	for _, ev := range events {
		if cap(*ev.buf) <= heldKept {
			heldBuffers.Put(ev.buf)
		}
	}
	clear(events)
}
