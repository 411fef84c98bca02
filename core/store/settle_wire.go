package store

// The settlement's arguments and results in PostgreSQL's wire formats, written and read here
// rather than by pgx's type map: a group commit sends 18 arrays per transaction, and pgx
// encodes each element through a reflected plan (several allocations per element) and decodes
// each numeric through database/sql's scanner. Written directly, a batch's arguments are one
// buffer, and a charge the database took in full is not parsed back (its text is the one sent).

import (
	"encoding/binary"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// arrayWriter appends one-dimensional arrays in array_send's binary format to a shared buffer:
// ndim, has-nulls flag, element OID, length and lower bound, then each element as its length
// and bytes (-1 for NULL).
type arrayWriter struct {
	buf  []byte
	args [][]byte
}

// begin starts an array of n elements of type oid; end closes it as the next argument.
func (w *arrayWriter) begin(oid uint32, n int) int {
	start := len(w.buf)
	w.buf = binary.BigEndian.AppendUint32(w.buf, 1)
	w.buf = binary.BigEndian.AppendUint32(w.buf, 0) // no NULL elements: every array here is dense
	w.buf = binary.BigEndian.AppendUint32(w.buf, oid)
	w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(n))
	w.buf = binary.BigEndian.AppendUint32(w.buf, 1)
	return start
}

func (w *arrayWriter) end(start int) { w.args = append(w.args, w.buf[start:len(w.buf):len(w.buf)]) }

func (w *arrayWriter) element(size int) {
	w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(size))
}

func (w *arrayWriter) uuids(n int, at func(int) uuid.UUID) {
	s := w.begin(pgtype.UUIDOID, n)
	for i := range n {
		u := at(i)
		w.element(16)
		w.buf = append(w.buf, u[:]...)
	}
	w.end(s)
}

func (w *arrayWriter) texts(n int, at func(int) string) {
	s := w.begin(pgtype.TextOID, n)
	for i := range n {
		v := at(i)
		w.element(len(v))
		w.buf = append(w.buf, v...)
	}
	w.end(s)
}

// jsonbs writes a jsonb[]: each element jsonb's binary form, a version byte (1) and the JSON
// text, which at appends to the buffer.
func (w *arrayWriter) jsonbs(n int, at func(int, []byte) []byte) {
	s := w.begin(pgtype.JSONBOID, n)
	for i := range n {
		lenAt := len(w.buf)
		w.element(0)
		w.buf = append(w.buf, 1)
		w.buf = at(i, w.buf)
		binary.BigEndian.PutUint32(w.buf[lenAt:], uint32(len(w.buf)-lenAt-4))
	}
	w.end(s)
}

func (w *arrayWriter) int8s(n int, at func(int) int64) {
	s := w.begin(pgtype.Int8OID, n)
	for i := range n {
		w.element(8)
		w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(at(i)))
	}
	w.end(s)
}

func (w *arrayWriter) bools(n int, at func(int) bool) {
	s := w.begin(pgtype.BoolOID, n)
	for i := range n {
		w.element(1)
		b := byte(0)
		if at(i) {
			b = 1
		}
		w.buf = append(w.buf, b)
	}
	w.end(s)
}

// timestamptzs writes times as microseconds since 2000-01-01 UTC, truncated as pgx does (so a
// zero time is 0001-01-01, as the record's missing end always was).
func (w *arrayWriter) timestamptzs(n int, at func(int) time.Time) {
	s := w.begin(pgtype.TimestamptzOID, n)
	for i := range n {
		t := at(i)
		w.element(8)
		w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(t.Unix()*1_000_000+int64(t.Nanosecond())/1000-microsecondsToY2K))
	}
	w.end(s)
}

const microsecondsToY2K = 946_684_800 * 1_000_000

// numericTexts writes a numeric[] in text format ('{1.5,NULL}'): decimals as the database
// parses them exactly, with no binary numeric encoding to get wrong. Decimal strings need no
// quoting.
func (w *arrayWriter) numericTexts(n int, at func(int) (string, bool)) {
	s := len(w.buf)
	w.buf = append(w.buf, '{')
	for i := range n {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if v, ok := at(i); ok {
			w.buf = append(w.buf, v...)
		} else {
			w.buf = append(w.buf, "NULL"...)
		}
	}
	w.buf = append(w.buf, '}')
	w.end(s)
}

// wireInt reads a binary int4 or int8 column; ok is false for NULL.
func wireInt(v []byte) (int64, bool) {
	switch len(v) {
	case 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case 8:
		return int64(binary.BigEndian.Uint64(v)), true
	}
	return 0, false
}

// wireBool reads a binary boolean column; NULL is false.
func wireBool(v []byte) bool { return len(v) == 1 && v[0] != 0 }

// wireTime reads a binary timestamptz (microseconds since 2000-01-01 UTC).
func wireTime(v []byte) (time.Time, bool) {
	us, ok := wireInt(v)
	if !ok {
		return time.Time{}, false
	}
	us += microsecondsToY2K
	return time.Unix(us/1_000_000, (us%1_000_000)*1000).UTC(), true
}
