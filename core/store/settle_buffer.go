package store

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// A settlement's Bind is tens of KiB (twenty arrays of a group's records), and pgproto3's
// Frontend encodes it into its write buffer by appends, which its Flush shrinks back to
// 1 KiB after every message larger than that: each commit grew the buffer again through a
// dozen copies, about twice the Bind allocated per commit. lendBuffer hands the frontend a
// buffer the connection keeps instead, through the one door pgproto3 opens on its buffer:
// a message's Encode returns the buffer the frontend goes on with. The frontend appends
// the Bind and what follows it there, writes it, and drops it at its Flush as it drops its
// own. The buffer is the connection's alone (its CustomData): a frontend that kept it past
// an error hands it only to a later statement of the same connection, never to another.

// keptBufferMax is the largest buffer a connection keeps: the messages of a settlement of
// ~280 charges (~230 bytes each), above any group commit's (groups stop growing at 16 live
// charges or 64 batch ones, and a commit takes what came during the one before).
const keptBufferMax = 64 << 10

// settleBufferKey is the lent buffer's key in a connection's CustomData.
const settleBufferKey = "modelgateway/store.settleBuffer"

// settleBuffer is the message that swaps the frontend's write buffer for buf: it encodes as
// nothing, after what the frontend's buffer held.
type settleBuffer struct {
	buf []byte
	// small counts the statements in a row that needed at most a quarter of buf (size).
	small int
}

func (*settleBuffer) Frontend() {}

func (*settleBuffer) Decode([]byte) error {
	return errors.New("store: a settlement's write buffer is not a message")
}

func (b *settleBuffer) Encode(dst []byte) ([]byte, error) { return append(b.buf[:0], dst...), nil }

// lendBuffer gives pc's frontend the connection's buffer, with room for need bytes, as its
// write buffer for the next statement.
// A message larger than keptBufferMax (a settlement of some hundreds of records: a backlog
// after an outage, say) is left to the frontend's own buffer, which it
// shrinks after the message: a connection keeps no more than a group commit's buffer, and
// one large settlement does not leave each connection of the pool holding its size.
func lendBuffer(pc *pgconn.PgConn, need int) {
	data := pc.CustomData()
	if data == nil || need > keptBufferMax {
		return
	}
	b, _ := data[settleBufferKey].(*settleBuffer)
	if b == nil {
		b = &settleBuffer{}
		data[settleBufferKey] = b
	}
	b.size(need)
	pc.Frontend().Send(b)
}

// shrinkAfter is how many statements in a row that need at most a quarter of a kept buffer
// (and less than shrinkFloor) make the connection give it up for one of their size: after a
// burst of load, each connection of the pool kept the buffer of its largest group commit
// (tens of KiB) while the groups that followed were a few charges each.
const (
	shrinkAfter = 32
	shrinkFloor = 4 << 10
)

// size makes b.buf hold need bytes: a group a little larger next time when it grows, and
// the size of the latest statements once shrinkAfter of them in a row needed a quarter of it.
func (b *settleBuffer) size(need int) {
	switch {
	case cap(b.buf) < need:
		b.buf, b.small = make([]byte, 0, need+need/4), 0
	case need <= cap(b.buf)/4 && cap(b.buf) > shrinkFloor:
		if b.small++; b.small >= shrinkAfter {
			b.buf, b.small = make([]byte, 0, need+need/4), 0
		}
	default:
		b.small = 0
	}
}

// settleMessageBytes is what a settlement's messages take in the frontend's buffer at most:
// the Bind's arguments with their length words, and room for the rest (the Bind's header
// and format codes, Describe, Execute, Sync, and the statement's text and types when it is
// sent unnamed).
func settleMessageBytes(args [][]byte) int {
	n := len(settleSQL) + 512
	for _, a := range args {
		n += 4 + len(a)
	}
	return n
}
