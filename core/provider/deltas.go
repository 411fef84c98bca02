package provider

import (
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// Deltas makes a stream's text events in blocks: text deltas are nearly every event of a
// translated stream, and one event and one string each were two allocations per chunk.
// Events come from a block of events, their text from a shared strings.Builder; each block
// is twice the size of the one before, up to a bound, so that a short answer does not pay for
// a long one's blocks. Nothing handed out is written again (a block is replaced when full, never
// reused), so events and their text may be kept as long as anyone likes; a kept one only
// keeps its block alive. The zero value is ready; one per stream (no lock).
type Deltas struct {
	events     []textEvent
	text       strings.Builder // the current text block; a full one is replaced by a new one
	nextEvents int             // the size of the next block of events
	// first is the first block of events, in the allocation that holds the Deltas (a
	// stream's decoder): a short answer then makes no block of its own. The text blocks'
	// Builder is held by value for the same reason.
	first [firstBlockEvents]textEvent
}

// Sizes of the blocks: the first ones, and the bounds.
const (
	firstBlockEvents = 8 // held in the Deltas: with the next block, a typical answer's ~22
	textBlockEvents  = 32
	firstBlockBytes  = 256
	textBlockBytes   = 4 << 10
)

// textEvent is a text event, its oneof wrapper and the delta in one (as TextEvent).
type textEvent struct {
	ev   corev1.GenerateEvent
	wrap corev1.GenerateEvent_Text
	text corev1.TextDelta
}

// Text is TextEvent(string(text)), with the event and its text from the stream's blocks.
func (d *Deltas) Text(text []byte) *corev1.GenerateEvent {
	if len(d.events) == 0 {
		if d.nextEvents == 0 {
			d.nextEvents, d.events = firstBlockEvents, d.first[:]
		} else {
			d.nextEvents = min(2*d.nextEvents, textBlockEvents)
			d.events = make([]textEvent, d.nextEvents)
		}
	}
	x := &d.events[0]
	d.events = d.events[1:]
	x.text.Text = d.String(text)
	x.wrap.Text = &x.text
	x.ev.Event = &x.wrap
	return &x.ev
}

// String returns text as a string kept in the stream's text block. A strings.Builder never
// writes the bytes it has handed out again, and this one never grows (a full one is
// replaced), so its strings share its one buffer.
func (d *Deltas) String(text []byte) string {
	if len(text) > textBlockBytes/4 {
		return string(text) // a large piece would waste most of a block
	}
	if d.text.Len()+len(text) > d.text.Cap() {
		size := firstBlockBytes
		if d.text.Cap() > 0 {
			size = min(2*d.text.Cap(), textBlockBytes)
		}
		// A new Builder, not Reset: the strings handed out keep the old buffer as it is.
		d.text = strings.Builder{}
		d.text.Grow(max(size, len(text)))
	}
	n := d.text.Len()
	d.text.Write(text)
	return d.text.String()[n:]
}

// Natives makes a passthrough stream's events in blocks, as Deltas makes text events: every
// upstream chunk of a passed-through stream becomes one, and NativeEvent was an allocation
// per chunk. The first block (nativeFirstBlock events) is held in the Natives itself, in the
// allocation that holds it (a stream's decoder); the next ones double up to nativeBlock
// events. A block is never written again once handed out, so an event may be kept as long as
// anyone likes (it keeps its block, or its decoder, alive). The zero value is ready; one per
// stream (no lock), which must not be copied once used.
type Natives struct {
	events []nativeEvent
	size   int // the size of the last block
	first  [nativeFirstBlock]nativeEvent
}

// Sizes of the blocks of native events: a short answer (a 20-word chat answer is 23 chunks)
// takes the first block and one more; a long one goes on in blocks of 32 (~4.5 KiB).
const (
	nativeFirstBlock = 8
	nativeBlock      = 32
)

// Event is NativeEvent(name, data), from the stream's blocks.
func (n *Natives) Event(name string, data []byte) *corev1.GenerateEvent {
	if len(n.events) == 0 {
		if n.size == 0 {
			n.size, n.events = nativeFirstBlock, n.first[:]
		} else {
			n.size = min(2*n.size, nativeBlock)
			n.events = make([]nativeEvent, n.size)
		}
	}
	x := &n.events[0]
	n.events = n.events[1:]
	return x.of(name, data)
}

// FinishRoom is a stream's finish event in its decoder's allocation: a stream finishes once,
// and FinishEvent was an allocation of its own for every stream. The zero value is ready.
type FinishRoom struct {
	ev     corev1.GenerateEvent
	wrap   corev1.GenerateEvent_Finish
	finish corev1.Finish
	used   bool
}

// Event is FinishEvent(r, stopSequence): in the room the first time, and, should a stream
// finish again, an event of its own (the first may be kept; it is never written again).
func (f *FinishRoom) Event(r corev1.FinishReason, stopSequence string) *corev1.GenerateEvent {
	if f.used {
		return FinishEvent(r, stopSequence)
	}
	f.used = true
	f.finish.Reason, f.finish.StopSequence = r, stopSequence
	f.wrap.Finish = &f.finish
	f.ev.Event = &f.wrap
	return &f.ev
}
