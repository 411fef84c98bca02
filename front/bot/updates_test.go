package bot

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/go-telegram/bot/models"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func update(t *testing.T, raw string) *models.Update {
	t.Helper()
	var u models.Update
	if err := json.Unmarshal([]byte(raw), &u); err != nil {
		t.Fatal(err)
	}
	return &u
}

// The fingerprint ignores the update id (a redelivery after a renumbering matches) and tells
// apart updates that differ in anything else.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	const msg = `{"update_id":%d,"message":{"message_id":%d,"date":1700000000,"chat":{"id":1,"type":"private"},"text":"/balance"}}`
	base := fingerprint(update(t, fmt.Sprintf(msg, 1001, 7)))
	for _, tc := range []struct {
		name string
		raw  string
		same bool
	}{
		{"the same update again", fmt.Sprintf(msg, 1001, 7), true},
		{"the same update renumbered lower", fmt.Sprintf(msg, 5, 7), true},
		{"the same update renumbered higher", fmt.Sprintf(msg, 90000, 7), true},
		{"another message with the same text", fmt.Sprintf(msg, 1002, 8), false},
		{"a callback query", `{"update_id":1001,"callback_query":{"id":"q1","from":{"id":1,"is_bot":false,"first_name":"A"},"chat_instance":"1","data":"x"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := fingerprint(update(t, tc.raw)) == base; got != tc.same {
				t.Fatalf("same fingerprint = %v, want %v", got, tc.same)
			}
		})
	}
}

// The record keeps the last id, whatever its direction, and a bounded window of fingerprints;
// with leaves the record it was called on as it was.
func TestHandledWindow(t *testing.T) {
	t.Parallel()
	sum := func(i int) string { return fmt.Sprintf("%024x", i) } // as long as a fingerprint
	h := &handled{Last: 1000}
	for i := range recentUpdates + 10 {
		h = h.with(int64(2_000_000_000+i), sum(i))
	}
	if len(h.Recent) != recentUpdates || !h.seen(sum(recentUpdates+9)) || !h.seen(sum(10)) || h.seen(sum(9)) {
		t.Fatalf("window of %d, first %v: want the last %d", len(h.Recent), h.Recent[0], recentUpdates)
	}
	lower := h.with(3, "renumbered")
	if lower.Last != 3 || !lower.seen("renumbered") || h.seen("renumbered") || h.Last != 2_000_000_000+recentUpdates+9 {
		t.Fatalf("after a lower id: last %d (was %d)", lower.Last, h.Last)
	}
	raw, err := json.Marshal(lower)
	if err != nil || len(raw) > 16<<10 {
		t.Fatalf("record of %d bytes (%v): above the gateway's 16 KiB limit on a value", len(raw), err)
	}
}

// Only refusals end a money call's retries; everything a network, a transport or a failing
// gateway answers is retried.
func TestDefinitive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.InvalidArgument, ""), true},
		{status.Error(codes.NotFound, ""), true},
		{status.Error(codes.AlreadyExists, ""), true},
		{status.Error(codes.FailedPrecondition, ""), true},
		{status.Error(codes.OutOfRange, ""), true},
		{fmt.Errorf("credit payment: %w", status.Error(codes.FailedPrecondition, "")), true},
		{status.Error(codes.Unavailable, ""), false},
		{status.Error(codes.DeadlineExceeded, ""), false},
		{status.Error(codes.Internal, ""), false},
		{status.Error(codes.Unknown, ""), false},
		{status.Error(codes.ResourceExhausted, ""), false},
		{status.Error(codes.Aborted, ""), false},
		{status.Error(codes.Canceled, ""), false},
		{status.Error(codes.Unauthenticated, ""), false},
		{status.Error(codes.DataLoss, ""), false},
		{errors.New("read tcp: connection reset by peer"), false},
	} {
		if got := definitive(tc.err); got != tc.want {
			t.Errorf("definitive(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
