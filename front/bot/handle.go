package bot

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/go-telegram/bot/models"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// call is one update being handled: who, where, and what to log about it. Logged are the
// update id, the chat type, the command and the outcome; never text, arguments or callback
// data.
type call struct {
	u        *models.Update
	chat     int64
	chatType string
	from     *models.User
	command  string
	args     string
	outcome  string
}

// handle dispatches one update. Its error is a gateway that could not be reached: the update
// is then retried, not recorded as handled. Every other failure is answered to the user.
func (b *Bot) handle(ctx context.Context, u *models.Update) error {
	c := &call{u: u}
	var err error
	switch {
	case u.Message != nil && u.Message.SuccessfulPayment != nil:
		c.from, c.chat, c.chatType, c.command = u.Message.From, u.Message.Chat.ID, string(u.Message.Chat.Type), "successful_payment"
		err = b.payment(ctx, c)
	case u.Message != nil:
		c.from, c.chat, c.chatType = u.Message.From, u.Message.Chat.ID, string(u.Message.Chat.Type)
		err = b.message(ctx, c)
	case u.CallbackQuery != nil:
		c.from, c.chatType, c.command = &u.CallbackQuery.From, "unknown", "callback"
		if m := u.CallbackQuery.Message.Message; m != nil {
			c.chat, c.chatType = m.Chat.ID, string(m.Chat.Type)
		}
		err = b.callback(ctx, c)
	case u.PreCheckoutQuery != nil:
		c.from, c.chatType, c.command = u.PreCheckoutQuery.From, "none", "pre_checkout_query"
		err = b.preCheckout(ctx, c)
	default:
		c.outcome = "ignored"
	}
	if err != nil {
		return err
	}
	b.log.Info("update", "update_id", u.ID, "chat_type", c.chatType, "command", c.command, "outcome", c.outcome)
	return nil
}

// commands are the commands a user may send; operatorCommands need GATEWAY_BOT_OPERATORS.
var commands = map[string]func(*Bot, context.Context, *call) error{
	"start": (*Bot).cmdStart, "help": (*Bot).cmdHelp, "newkey": (*Bot).cmdNewKey, "keys": (*Bot).cmdKeys,
	"revoke": (*Bot).cmdRevoke, "rotate": (*Bot).cmdRotate, "models": (*Bot).cmdModels,
	"balance": (*Bot).cmdBalance, "usage": (*Bot).cmdUsage, "topup": (*Bot).cmdTopUp,
	"limit": (*Bot).cmdLimit,
}

var operatorCommands = map[string]func(*Bot, context.Context, *call) error{
	"credit": (*Bot).cmdCredit, "find": (*Bot).cmdFind, "refund": (*Bot).cmdRefund,
}

func (b *Bot) message(ctx context.Context, c *call) error {
	text := strings.TrimSpace(c.u.Message.Text)
	if !strings.HasPrefix(text, "/") {
		c.command = "text"
		if c.chatType != string(models.ChatTypePrivate) {
			c.outcome = "ignored"
			return nil
		}
		c.outcome = "hint"
		return b.reply(ctx, c, msgHint)
	}
	word, args, _ := strings.Cut(text[1:], " ")
	word, _, _ = strings.Cut(word, "@") // /keys@SomeBot in groups
	c.args = strings.TrimSpace(args)
	word = strings.ToLower(word)
	h, ok := commands[word]
	if !ok && c.from != nil && b.cfg.Operators[c.from.ID] {
		h, ok = operatorCommands[word]
	}
	if !ok {
		c.command, c.outcome = "unknown", "unknown_command"
		if c.chatType != string(models.ChatTypePrivate) {
			return nil
		}
		return b.reply(ctx, c, msgUnknown)
	}
	c.command = word
	if c.chatType != string(models.ChatTypePrivate) || c.from == nil {
		// Nothing is created and nothing secret is shown outside a private chat.
		c.outcome = "refused_not_private"
		return b.reply(ctx, c, msgPrivateOnly)
	}
	return h(b, ctx, c)
}

// reply sends an HTML message to the update's chat. Telegram failures are logged as the
// outcome and not retried beyond 429s: a user who blocked the bot (403) stays blocked.
func (b *Bot) reply(ctx context.Context, c *call, html string) error {
	_, err := b.replyMarkup(ctx, c, html, nil)
	return err
}

func (b *Bot) replyMarkup(ctx context.Context, c *call, html string, markup models.ReplyMarkup) (*models.Message, error) {
	m, err := b.tg.send(ctx, c.chat, html, markup, false)
	if err != nil {
		c.outcome += "; reply failed: " + err.Error()
		return nil, nil
	}
	return m, nil
}

// failed answers a gateway error: unreachable is returned for a retry, anything else is told
// to the user by its code.
func (b *Bot) failed(ctx context.Context, c *call, err error) error {
	if unavailable(err) {
		return err
	}
	c.outcome = "gateway_error " + grpcCode(err)
	return b.reply(ctx, c, msgFailed(grpcCode(err)))
}

// profile is the caller's profile, created on first contact.
func (b *Bot) profile(ctx context.Context, c *call) (*adminv1.Profile, error) {
	name := strings.TrimSpace(c.from.FirstName + " " + c.from.LastName)
	if name == "" {
		name = c.from.Username
	}
	return b.gw.profile(ctx, c.from.ID, name)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
