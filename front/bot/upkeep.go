package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// deletion is a message holding a secret, to be deleted at Due.
type deletion struct {
	Chat    int64     `json:"chat"`
	Message int       `json:"message"`
	Due     time.Time `json:"due"`
}

func (d deletion) key() string {
	return fmt.Sprintf("%s%d.%d", prefixDelete, d.Chat, d.Message)
}

// Telegram lets a bot delete its messages for 48 hours; a record older than that is useless.
const deleteHorizon = 48 * time.Hour

// scheduleDeletion records the deletion in the gateway so that a restart still performs it;
// while the gateway is unreachable it is kept in memory and recorded later.
func (b *Bot) scheduleDeletion(ctx context.Context, chat int64, msgID int) {
	d := deletion{Chat: chat, Message: msgID, Due: time.Now().Add(b.cfg.SecretTTL)}
	if err := b.gw.put(ctx, d.key(), d, d.Due.Add(deleteHorizon)); err != nil {
		b.mu.Lock()
		b.unscheduled = append(b.unscheduled, d)
		b.mu.Unlock()
	}
}

// deleteLoop deletes secret messages when due, from the records in the gateway.
func (b *Bot) deleteLoop(ctx context.Context) {
	every := min(max(b.cfg.SecretTTL/10, 200*time.Millisecond), 30*time.Second)
	for sleep(ctx, every) == nil {
		b.mu.Lock()
		pending := b.unscheduled
		b.unscheduled = nil
		b.mu.Unlock()
		for _, d := range pending {
			if err := b.gw.put(ctx, d.key(), d, d.Due.Add(deleteHorizon)); err != nil {
				b.mu.Lock()
				b.unscheduled = append(b.unscheduled, d)
				b.mu.Unlock()
			}
		}
		list, err := b.gw.admin.ListBotState(ctx, &adminv1.ListBotStateRequest{Prefix: prefixDelete})
		if err != nil {
			continue
		}
		for _, st := range list.GetStates() {
			d, ok := parseDeletion(st.GetKey(), st.GetValue())
			if !ok || time.Now().Before(d.Due) {
				continue
			}
			err := b.tg.deleteMessage(ctx, d.Chat, d.Message)
			outcome := "deleted"
			if ae, isAPI := err.(*apiError); err != nil && (!isAPI || ae.Code != 400 && ae.Code != 403) {
				// Network trouble or rate limit: try again next round. A 400 (already deleted,
				// too old) or 403 (the user blocked the bot) will not get better.
				continue
			} else if err != nil {
				outcome = "delete_refused"
			}
			if _, err := b.gw.admin.TakeBotState(ctx, &adminv1.TakeBotStateRequest{Key: st.GetKey()}); err != nil && !isNotFound(err) {
				continue
			}
			b.log.Info("secret message", "outcome", outcome)
		}
	}
}

func parseDeletion(key, value string) (deletion, bool) {
	var d deletion
	rest, ok := strings.CutPrefix(key, prefixDelete)
	if !ok {
		return d, false
	}
	c, m, ok := strings.Cut(rest, ".")
	if !ok {
		return d, false
	}
	chat, err1 := strconv.ParseInt(c, 10, 64)
	msg, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil {
		return d, false
	}
	d.Chat, d.Message = chat, msg
	if err := jsonUnmarshal(value, &d); err != nil {
		return d, false
	}
	return d, true
}

// reportHealth tells the gateway that polling works.
func (b *Bot) reportHealth(ctx context.Context, polled time.Time) error {
	_, err := b.gw.admin.ReportBotHealth(ctx, &adminv1.ReportBotHealthRequest{LastPollTime: timestamppb.New(polled)})
	return err
}

// grpcCode is what is logged of a gateway error: its code, never its message.
func grpcCode(err error) string {
	if err == nil {
		return ""
	}
	if s, ok := status.FromError(err); ok {
		return s.Code().String()
	}
	return "error"
}

// limiter allows each user a few of each costly action per window: creating and rotating
// keys, sending invoices.
type limiter struct {
	mu   sync.Mutex
	seen map[string][]time.Time
	max  int
	per  time.Duration
}

func newLimiter() *limiter {
	return &limiter{seen: map[string][]time.Time{}, max: 5, per: 10 * time.Minute}
}

// allow records an action of a user and says whether it is within the limit.
func (l *limiter) allow(user int64, action string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := action + ":" + strconv.FormatInt(user, 10)
	now := time.Now()
	kept := l.seen[k][:0]
	for _, t := range l.seen[k] {
		if now.Sub(t) < l.per {
			kept = append(kept, t)
		}
	}
	if len(kept) >= l.max {
		l.seen[k] = kept
		return false
	}
	l.seen[k] = append(kept, now)
	return true
}
