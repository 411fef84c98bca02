package relay

import (
	"regexp"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// What a streamed answer cost is shown where each protocol's clients read usage, as OpenRouter
// does: "cost", a JSON number written from the exact decimal (no float is involved on our
// side; clients that parse it as a float see the same digits OpenRouter users see), with
// "currency" beside it. Core sets both on the stream's usage event once the charge is known;
// a stream that is not charged shows neither.

// decimalNumber guards the splice: only a plain decimal becomes a raw JSON number.
var decimalNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`)

// HasCost reports whether the usage event carries a cost to show.
func HasCost(u *corev1.Usage) bool {
	return u != nil && u.GetCurrency() != "" && decimalNumber.MatchString(u.GetCost())
}

// AddCost sets "cost" and "currency" in the object at path of a JSON document (path "" is the
// document itself); without a cost, or without an object there, the document is unchanged.
func AddCost(doc []byte, path string, u *corev1.Usage) []byte {
	if !HasCost(u) {
		return doc
	}
	if at := gjson.GetBytes(doc, path); path == "" && !gjson.ValidBytes(doc) || path != "" && !at.IsObject() {
		return doc
	}
	prefix := ""
	if path != "" {
		prefix = path + "."
	}
	out, err := sjson.SetRawBytes(doc, prefix+"cost", []byte(u.GetCost()))
	if err != nil {
		return doc
	}
	if out, err = sjson.SetBytes(out, prefix+"currency", u.GetCurrency()); err != nil {
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
}

type heldEvent struct {
	name string
	data []byte
}

// Holding reports whether events are being held (the final usage has been seen).
func (t *Tail) Holding() bool { return len(t.events) > 0 }

// Hold keeps an event; the first one held must hold the usage object at usagePath.
func (t *Tail) Hold(name string, data []byte, usagePath string) {
	if len(t.events) == 0 {
		t.path = usagePath
	}
	t.events = append(t.events, heldEvent{name, append([]byte(nil), data...)})
}

// Flush writes the held events, the cost spliced into the first when u carries one.
func (t *Tail) Flush(write func(name string, data []byte) error, u *corev1.Usage) error {
	events := t.events
	t.events = nil
	for i, ev := range events {
		data := ev.data
		if i == 0 {
			data = AddCost(data, t.path, u)
		}
		if err := write(ev.name, data); err != nil {
			return err
		}
	}
	return nil
}
