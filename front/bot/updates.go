package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/go-telegram/bot/models"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// handled is what the bot remembers of the updates it handled, kept in the gateway: the last
// one's id, which makes the polling offset, and the fingerprints of the most recent ones, which
// tell a redelivered update from a new one.
//
// Update ids alone cannot tell them apart: after a week without updates Telegram picks the next
// id at random, so a new update may come with an id below the last one handled. A bot that
// skipped every id not above the last (as this one did) would skip every update after such a
// renumbering, payments included. What Telegram redelivers is the same update again (under
// its old id, or under a new one after a renumbering): its content, not its id, says "seen
// before".
type handled struct {
	Last   int64        `json:"last"`
	Recent []seenUpdate `json:"recent"`
}

type seenUpdate struct {
	ID  int64  `json:"id"`
	Sum string `json:"sum"`
}

// recentUpdates bounds the window of fingerprints. Telegram redelivers only updates it has not
// seen confirmed, and the offset sent after each batch (at most 100 updates) confirms the
// batch, so a redelivery is always among the last batch; 128 covers it with room, and the
// record stays far below the gateway's 16 KiB limit on a state value (about 6 KiB).
const recentUpdates = 128

// stateHandled is the record's key; stateOffset is the plain update id earlier versions kept.
const stateHandled = "handled"

// fingerprint identifies an update by its content without its id, so that a redelivery under
// a new id (after a renumbering) is recognised too. Distinct updates always differ in content:
// a message id and date, a callback or pre-checkout query id.
func fingerprint(u *models.Update) string {
	c := *u
	c.ID = 0
	raw, err := json.Marshal(&c)
	if err != nil {
		// Not reachable for a decoded update; an unmarshalable one is then only deduplicated
		// by id.
		raw = []byte("id:" + strconv.FormatInt(u.ID, 10))
	}
	s := sha256.Sum256(raw)
	return hex.EncodeToString(s[:12])
}

// seen says whether an update with this fingerprint was handled recently.
func (h *handled) seen(sum string) bool {
	for _, s := range h.Recent {
		if s.Sum == sum {
			return true
		}
	}
	return false
}

// with is the record after one more update was handled; h itself is left as it was, so that
// it stays the truth until the new record is saved.
func (h *handled) with(id int64, sum string) *handled {
	recent := append(append(make([]seenUpdate, 0, len(h.Recent)+1), h.Recent...), seenUpdate{ID: id, Sum: sum})
	if len(recent) > recentUpdates {
		recent = recent[len(recent)-recentUpdates:]
	}
	return &handled{Last: id, Recent: recent}
}

// handled reads the record; an earlier version's plain offset becomes a record without
// fingerprints, and none at all an empty one.
func (g *gateway) handled(ctx context.Context) (*handled, error) {
	st, err := g.admin.GetBotState(ctx, &adminv1.GetBotStateRequest{Key: stateHandled})
	if err == nil {
		var h handled
		if err := json.Unmarshal([]byte(st.GetValue()), &h); err != nil {
			return nil, fmt.Errorf("stored record of handled updates: %w", err)
		}
		return &h, nil
	}
	if !isNotFound(err) {
		return nil, err
	}
	off, err := g.offset(ctx)
	if err != nil {
		return nil, err
	}
	return &handled{Last: off}, nil
}

func (g *gateway) saveHandled(ctx context.Context, h *handled) error {
	raw, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = g.admin.PutBotState(ctx, &adminv1.PutBotStateRequest{Key: stateHandled, Value: string(raw)})
	return err
}
