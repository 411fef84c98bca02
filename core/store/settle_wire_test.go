package store

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// The settlement's hand-written arrays are byte for byte what pgx's own binary encoding makes
// of the same values, so the database reads them as it read pgx's.
func TestSettleArraysAreWhatPgxWrites(t *testing.T) {
	m := pgtype.NewMap()
	u := []uuid.UUID{uuid.MustParse("0b8f1a2e-5c1d-4e0a-9a57-3f2d9c1e7b64"), {}}
	texts := []string{"req-1", "", "модель\x01"}
	ints := []int64{0, -1, 1 << 40}
	bools := []bool{true, false}
	times := []time.Time{{}, time.Date(2026, 11, 25, 5, 30, 1, 123456789, time.UTC), time.Date(1999, 12, 31, 23, 59, 59, 999, time.FixedZone("x", 3*3600))}
	for _, c := range []struct {
		name  string
		oid   uint32
		value any
		write func(w *arrayWriter)
	}{
		{"uuid[]", pgtype.UUIDArrayOID, [][16]byte{u[0], u[1]}, func(w *arrayWriter) { w.uuids(len(u), func(i int) uuid.UUID { return u[i] }) }},
		{"text[]", pgtype.TextArrayOID, texts, func(w *arrayWriter) { w.texts(len(texts), func(i int) string { return texts[i] }) }},
		{"int8[]", pgtype.Int8ArrayOID, ints, func(w *arrayWriter) { w.int8s(len(ints), func(i int) int64 { return ints[i] }) }},
		{"bool[]", pgtype.BoolArrayOID, bools, func(w *arrayWriter) { w.bools(len(bools), func(i int) bool { return bools[i] }) }},
		{"timestamptz[]", pgtype.TimestamptzArrayOID, times, func(w *arrayWriter) { w.timestamptzs(len(times), func(i int) time.Time { return times[i] }) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := arrayWriter{buf: []byte("junk before")}
			c.write(&w)
			if len(w.args) != 1 || !bytes.Equal(w.args[0], want) {
				t.Fatalf("wrote %x\npgx writes %x", w.args, want)
			}
		})
	}
}

func TestSettleCostsAreANumericArrayLiteral(t *testing.T) {
	costs := []string{"0.0012", "", "-3"}
	var w arrayWriter
	w.numericTexts(len(costs), func(i int) (string, bool) { return costs[i], costs[i] != "" })
	if got := string(w.args[0]); got != "{0.0012,NULL,-3}" {
		t.Fatalf("got %s", got)
	}
}

// settleArgsBytes bounds what settleArgs writes, so that its buffer is made once: records
// with and without costs, attempts, long names and numbers at their widest.
func TestSettleArgsBytesBoundsWhatIsWritten(t *testing.T) {
	end := time.Now()
	recs := []RequestRecord{
		{RequestID: "gw-1", Model: "m", EndpointFamily: "chat", Status: "ok", Currency: "RUB", StartTime: end, EndTime: &end},
		{RequestID: "a-client-id-of-some-length", Model: "a-rather-long-model-name-2025-08-07", EndpointFamily: "responses",
			Status: "upstream_error", Currency: "USD", InputTokens: 1 << 62, Attempts: []AttemptRecord{
				{Provider: "openai", UpstreamModel: "gpt-5-mini-2025-08-07", Status: 503, ErrorCode: "503", DurationMS: -1 << 63},
				{Provider: "azure", UpstreamModel: "gpt-5-mini", Status: 200, DurationMS: 1<<63 - 1},
			}},
		{RequestID: "r", Attempts: []AttemptRecord{{}}},
	}
	costs := []string{"0.000123456789", "", "12345678901234567890.123456789"}
	for n := 1; n <= len(recs); n++ {
		rec := func(j int) *RequestRecord { return &recs[j] }
		args := settleArgs(arrayWriter{}, uuid.New(), n, rec, costs).args
		written := 0
		for _, a := range args {
			written += len(a)
		}
		if bound := settleArgsBytes(n, rec, costs); written > bound {
			t.Errorf("%d records: %d bytes written, bound %d", n, written, bound)
		}
		// The arrays follow each other in one buffer: none was copied into a larger one.
		for i := 2; i < len(args); i++ {
			if unsafe.Pointer(&args[i][0]) != unsafe.Add(unsafe.Pointer(&args[i-1][0]), len(args[i-1])) {
				t.Fatalf("%d records: argument %d does not follow argument %d in the buffer", n, i, i-1)
			}
		}
	}
}
