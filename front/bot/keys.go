package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
)

// cmdNewKey starts a key creation: endpoint families, then models, then a confirmation.
// Nothing is created before the confirmation, so a replayed /newkey cannot mint a key.
func (b *Bot) cmdNewKey(ctx context.Context, c *call) error {
	name := c.args
	if name == "" {
		name = "key-" + time.Now().UTC().Format("0102-1504")
	}
	if utf8.RuneCountInString(name) > 64 {
		c.outcome = "bad_name"
		return b.reply(ctx, c, "A key name has at most 64 characters.")
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	cat, err := b.gw.catalog.GetCatalog(ctx, &catalogv1.GetCatalogRequest{Currency: p.GetCurrency()})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	fams, mods := choices(cat)
	s := &session{User: c.from.ID, Profile: p.GetId(), Name: name, Step: "endpoints", Families: fams, Models: mods, Chat: c.chat}
	s.AllFamilies, s.Family = choose(fams, []string{"*"})
	s.AllModels, s.Model = choose(mods, []string{"*"})
	return b.openSession(ctx, c, s)
}

// openSession records a session under the update's id (a replay of the update overwrites the
// same one) and sends its first keyboard.
func (b *Bot) openSession(ctx context.Context, c *call, s *session) error {
	id := strconv.FormatInt(c.u.ID, 10)
	if err := b.gw.put(ctx, sessionKey(id), s, time.Now().Add(sessionTTL)); err != nil {
		return b.failed(ctx, c, err)
	}
	text, kb := s.view(id)
	m, err := b.replyMarkup(ctx, c, text, kb)
	if err != nil || m == nil {
		return err
	}
	s.Message = m.ID
	if err := b.gw.put(ctx, sessionKey(id), s, time.Now().Add(sessionTTL)); err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "choosing"
	return nil
}

func keyLine(k *adminv1.Key) string {
	return fmt.Sprintf("<b>%s</b> <code>%s…</code> %s\n  endpoints: %s\n  models: %s", esc(k.GetName()), esc(k.GetPrefix()), esc(k.GetState()),
		esc(strings.Join(k.GetAllowedEndpoints(), ", ")), esc(strings.Join(k.GetAllowedModels(), ", ")))
}

// cmdKeys lists the user's keys, never a secret, with buttons for the active ones.
func (b *Bot) cmdKeys(ctx context.Context, c *call) error {
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	ks, err := b.gw.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: p.GetId()})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	c.outcome = "ok"
	if len(ks.GetKeys()) == 0 {
		return b.reply(ctx, c, "You have no keys yet. Create one with /newkey.")
	}
	var s strings.Builder
	s.WriteString("<b>Your keys</b>\n")
	var rows [][]models.InlineKeyboardButton
	revoked := 0
	for _, k := range ks.GetKeys() {
		if k.GetState() != keyActive {
			revoked++
			continue
		}
		s.WriteString("\n" + keyLine(k) + budgetLine(k, p.GetCurrency()) + "\n")
		if len(rows) < 80 {
			n := k.GetName()
			if utf8.RuneCountInString(n) > 16 {
				n = string([]rune(n)[:16]) + "…"
			}
			rows = append(rows,
				[]models.InlineKeyboardButton{{Text: "Models · " + n, CallbackData: cbKey + cbSep + keyModels + cbSep + k.GetId()}, {Text: "Endpoints · " + n, CallbackData: cbKey + cbSep + keyEndpoints + cbSep + k.GetId()}},
				[]models.InlineKeyboardButton{{Text: "Rotate · " + n, CallbackData: cbKey + cbSep + keyRotate + cbSep + k.GetId()}, {Text: "Revoke · " + n, CallbackData: cbKey + cbSep + keyRevoke + cbSep + k.GetId()}})
		}
	}
	if revoked > 0 {
		fmt.Fprintf(&s, "\nand %d revoked key(s).", revoked)
	}
	var kb models.ReplyMarkup
	if len(rows) > 0 {
		kb = &models.InlineKeyboardMarkup{InlineKeyboard: rows}
	}
	_, err = b.replyMarkup(ctx, c, clip(s.String()), kb)
	return err
}

func (b *Bot) cmdRevoke(ctx context.Context, c *call) error { return b.askKeyAction(ctx, c, keyRevoke) }
func (b *Bot) cmdRotate(ctx context.Context, c *call) error { return b.askKeyAction(ctx, c, keyRotate) }

// askKeyAction finds the user's active key by name or prefix and asks for a confirmation.
// Only the user's own keys are searched, so another user's key names find nothing.
func (b *Bot) askKeyAction(ctx context.Context, c *call, action string) error {
	if c.args == "" {
		c.outcome = "usage"
		return b.reply(ctx, c, fmt.Sprintf("Usage: /%s &lt;key name or prefix&gt; (see /keys).", c.command))
	}
	p, err := b.profile(ctx, c)
	if err != nil {
		return b.failed(ctx, c, err)
	}
	ks, err := b.gw.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: p.GetId()})
	if err != nil {
		return b.failed(ctx, c, err)
	}
	k, ok := matchKey(ks.GetKeys(), c.args)
	if !ok {
		return b.noSuchKey(ctx, c, k == nil)
	}
	c.outcome = "asked"
	return b.confirmKeyAction(ctx, c, k, action)
}

// matchKey finds the active key named arg or whose prefix starts with arg (4 characters at
// least): ok with the key, or not ok with nil (none) or a key (several match).
func matchKey(ks []*adminv1.Key, arg string) (*adminv1.Key, bool) {
	arg = strings.TrimSuffix(arg, "…")
	var found []*adminv1.Key
	for _, k := range ks {
		if k.GetState() == keyActive && (k.GetName() == arg || len(arg) >= 4 && strings.HasPrefix(k.GetPrefix(), arg)) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil, false
	case 1:
		return found[0], true
	}
	return found[0], false
}

// noSuchKey answers a key argument that found none, or several.
func (b *Bot) noSuchKey(ctx context.Context, c *call, none bool) error {
	if none {
		c.outcome = "no_such_key"
		return b.reply(ctx, c, "You have no active key with that name or prefix. /keys lists them.")
	}
	c.outcome = "ambiguous"
	return b.reply(ctx, c, "Several of your keys match; use the prefix shown by /keys.")
}

// findKey is the user's active key named by arg; found is false when the user was told that
// none or several match. Only the user's own keys are searched.
func (b *Bot) findKey(ctx context.Context, c *call, profile, arg string) (k *adminv1.Key, found bool, err error) {
	ks, err := b.gw.admin.ListKeys(ctx, &adminv1.ListKeysRequest{ProfileId: profile})
	if err != nil {
		return nil, false, b.failed(ctx, c, err)
	}
	k, ok := matchKey(ks.GetKeys(), arg)
	if !ok {
		return nil, false, b.noSuchKey(ctx, c, k == nil)
	}
	return k, true, nil
}

func (b *Bot) confirmKeyAction(ctx context.Context, c *call, k *adminv1.Key, action string) error {
	q, yes := "Revoke", "Yes, revoke"
	if action == keyRotate {
		q, yes = "Rotate (a new secret, the old one stops working)", "Yes, rotate"
	}
	kb := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
		{Text: yes, CallbackData: cbKeyConfirmed + cbSep + action + cbSep + k.GetId()}, {Text: "Cancel", CallbackData: cbDismiss},
	}}}
	_, err := b.replyMarkup(ctx, c, fmt.Sprintf("%s key %s?", q, keyLine(k)), kb)
	return err
}

// callback handles a button. The data is whatever the client sent: every action re-checks
// that the session or key belongs to the caller, and every callback is answered.
func (b *Bot) callback(ctx context.Context, c *call) error {
	q := c.u.CallbackQuery
	answer := ""
	if c.chatType != string(models.ChatTypePrivate) {
		c.outcome, answer = "refused_not_private", msgPrivateOnly
	} else {
		var err error
		answer, err = b.button(ctx, c, q.Data)
		if err != nil {
			if unavailable(err) {
				_ = b.tg.answerCallback(ctx, q.ID, "The gateway cannot be reached; retrying.")
				return err
			}
			c.outcome, answer = "gateway_error "+grpcCode(err), msgFailed(grpcCode(err))
		}
	}
	if err := b.tg.answerCallback(ctx, q.ID, answer); err != nil {
		c.outcome += "; answer failed: " + err.Error()
	}
	return nil
}

// button acts on callback data and returns the callback's answer text.
func (b *Bot) button(ctx context.Context, c *call, data string) (string, error) {
	parts := strings.Split(data, cbSep)
	switch {
	case data == cbDismiss:
		c.outcome = "dismissed"
		if m := c.u.CallbackQuery.Message.Message; m != nil {
			_ = b.tg.edit(ctx, c.chat, m.ID, "Cancelled.", nil)
		}
		return "", nil
	case parts[0] == cbSession && len(parts) == 3 && isDigits(parts[1]):
		return b.sessionButton(ctx, c, parts[1], parts[2])
	case (parts[0] == cbKey || parts[0] == cbKeyConfirmed) && len(parts) == 3:
		return b.keyButton(ctx, c, parts[0] == cbKeyConfirmed, parts[1], parts[2])
	}
	c.outcome = "bad_callback"
	return "Unknown button.", nil
}

func (b *Bot) sessionButton(ctx context.Context, c *call, id, op string) (string, error) {
	s, refusal, err := b.loadSession(ctx, id, c.from.ID)
	if err != nil || s == nil {
		c.outcome = "refused"
		return refusal, err
	}
	switch {
	case op == opCancel:
		if err := b.gw.take(ctx, sessionKey(id), &session{}); err != nil && err != errGone {
			return "", err
		}
		c.outcome = "cancelled"
		_ = b.tg.edit(ctx, s.Chat, s.Message, "Cancelled.", nil)
		return "Cancelled.", nil
	case op == opCreate && s.KeyID == "" && s.Step == "confirm":
		return b.createKey(ctx, c, id)
	case op == opNext && s.KeyID != "":
		return b.saveKey(ctx, c, id, s)
	case op == opNext:
		if (s.Step == "endpoints" && len(selection(s.AllFamilies, s.Families, s.Family)) == 0) ||
			(s.Step == "models" && len(selection(s.AllModels, s.Models, s.Model)) == 0) {
			c.outcome = "nothing_chosen"
			return "Choose at least one, or all.", nil
		}
		s.Step = map[string]string{"endpoints": "models", "models": "confirm"}[s.Step]
	case len(op) >= 2 && (op[0] == opEndpoints && s.Step == "endpoints" || op[0] == opModels && s.Step == "models"):
		if !s.toggle(op[0], op[1:]) {
			c.outcome = "bad_callback"
			return "Unknown button.", nil
		}
	default:
		c.outcome = "stale_button"
		return "That button belongs to an earlier step.", nil
	}
	if err := b.gw.put(ctx, sessionKey(id), s, time.Now().Add(sessionTTL)); err != nil {
		return "", err
	}
	text, kb := s.view(id)
	_ = b.tg.edit(ctx, s.Chat, s.Message, text, kb)
	c.outcome = "choosing"
	return "", nil
}

// createKey takes the session (so that exactly one confirmation creates a key), creates the
// key and shows its secret once.
func (b *Bot) createKey(ctx context.Context, c *call, id string) (string, error) {
	if !b.limits.allow(c.from.ID, "create") {
		c.outcome = "rate_limited"
		return msgLimited, nil
	}
	var s session
	if err := b.gw.take(ctx, sessionKey(id), &s); err != nil {
		if err == errGone {
			c.outcome = "already_done"
			return msgGone, nil
		}
		return "", err
	}
	resp, err := b.gw.admin.CreateKey(ctx, &adminv1.CreateKeyRequest{
		ProfileId: s.Profile, Name: s.Name,
		AllowedEndpoints: selection(s.AllFamilies, s.Families, s.Family), AllowedModels: selection(s.AllModels, s.Models, s.Model),
		MaxConcurrentRequests: b.cfg.KeyLimits.MaxConcurrentRequests, MaxRequestsPerSecond: b.cfg.KeyLimits.MaxRequestsPerSecond,
		MaxTokensPerMinute: b.cfg.KeyLimits.MaxTokensPerMinute,
	})
	if err != nil {
		if unavailable(err) {
			// Not created: put the session back so the retried update can create it.
			if perr := b.gw.put(ctx, sessionKey(id), &s, time.Now().Add(sessionTTL)); perr != nil {
				b.log.Warn("session lost while the gateway is unreachable", "outcome", "session_lost")
			}
		}
		return "", err
	}
	_ = b.tg.edit(ctx, s.Chat, s.Message, fmt.Sprintf("Key <b>%s</b> created.", esc(s.Name)), nil)
	c.outcome = "key_created"
	b.showSecret(ctx, c, resp.GetKey().GetName(), resp.GetSecret(), false)
	return "Key created.", nil
}

// showSecret sends the one message holding a secret, protected from forwarding and saving,
// and schedules its deletion.
func (b *Bot) showSecret(ctx context.Context, c *call, name, secret string, rotated bool) {
	m, err := b.tg.send(ctx, c.chat, b.secretText(name, secret, rotated), nil, true)
	if err != nil {
		c.outcome += "; secret not delivered: " + err.Error()
		return
	}
	b.scheduleDeletion(ctx, c.chat, m.ID)
}

// saveKey applies an edit session to its key, after checking the key is still the caller's.
func (b *Bot) saveKey(ctx context.Context, c *call, id string, s *session) (string, error) {
	p, err := b.profile(ctx, c)
	if err != nil {
		return "", err
	}
	k, err := b.gw.ownKey(ctx, p.GetId(), s.KeyID)
	if err != nil {
		return "", err
	}
	if k == nil || s.Profile != p.GetId() {
		c.outcome = "not_owner"
		return msgNotYours, nil
	}
	in := &adminv1.Key{Id: k.GetId()}
	mask := &fieldmaskpb.FieldMask{}
	if s.Step == "endpoints" {
		in.AllowedEndpoints = selection(s.AllFamilies, s.Families, s.Family)
		mask.Paths = []string{"allowed_endpoints"}
	} else {
		in.AllowedModels = selection(s.AllModels, s.Models, s.Model)
		mask.Paths = []string{"allowed_models"}
	}
	if len(in.AllowedEndpoints)+len(in.AllowedModels) == 0 {
		c.outcome = "nothing_chosen"
		return "Choose at least one, or all.", nil
	}
	k, err = b.gw.admin.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Key: in, UpdateMask: mask})
	if err != nil {
		return "", err
	}
	_, _ = b.gw.admin.TakeBotState(ctx, &adminv1.TakeBotStateRequest{Key: sessionKey(id)})
	_ = b.tg.edit(ctx, s.Chat, s.Message, "Saved: "+keyLine(k), nil)
	c.outcome = "key_updated"
	return "Saved.", nil
}

// keyButton handles the /keys buttons (k:) and the revoke/rotate confirmations (ky:).
func (b *Bot) keyButton(ctx context.Context, c *call, confirmed bool, action, keyID string) (string, error) {
	p, err := b.profile(ctx, c)
	if err != nil {
		return "", err
	}
	k, err := b.gw.ownKey(ctx, p.GetId(), keyID)
	if err != nil {
		return "", err
	}
	if k == nil {
		c.outcome = "not_owner"
		return msgNotYours, nil
	}
	if k.GetState() != keyActive {
		c.outcome = "already_revoked"
		return "That key is already revoked.", nil
	}
	switch {
	case !confirmed && (action == keyModels || action == keyEndpoints):
		cat, err := b.gw.catalog.GetCatalog(ctx, &catalogv1.GetCatalogRequest{Currency: p.GetCurrency()})
		if err != nil {
			return "", err
		}
		fams, mods := choices(cat)
		s := &session{User: c.from.ID, Profile: p.GetId(), KeyID: k.GetId(), Name: k.GetName(), Families: fams, Models: mods, Chat: c.chat, Step: "endpoints"}
		if action == keyModels {
			s.Step = "models"
		}
		s.AllFamilies, s.Family = choose(fams, k.GetAllowedEndpoints())
		s.AllModels, s.Model = choose(mods, k.GetAllowedModels())
		return "", b.openSession(ctx, c, s)
	case !confirmed && (action == keyRevoke || action == keyRotate):
		c.outcome = "asked"
		return "", b.confirmKeyAction(ctx, c, k, action)
	case confirmed && action == keyRevoke:
		if _, err := b.gw.admin.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: k.GetId()}); err != nil {
			return "", err
		}
		c.outcome = "key_revoked"
		if m := c.u.CallbackQuery.Message.Message; m != nil {
			_ = b.tg.edit(ctx, c.chat, m.ID, fmt.Sprintf("Key <b>%s</b> revoked.", esc(k.GetName())), nil)
		}
		return "Revoked.", nil
	case confirmed && action == keyRotate:
		if !b.limits.allow(c.from.ID, "rotate") {
			c.outcome = "rate_limited"
			return msgLimited, nil
		}
		// Rotating revokes the old key, so a second press (or a replayed update) finds it
		// revoked and cannot rotate twice.
		resp, err := b.gw.admin.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: k.GetId()})
		if status.Code(err) == codes.FailedPrecondition {
			c.outcome = "already_revoked"
			return "That key is already revoked.", nil
		}
		if err != nil {
			return "", err
		}
		c.outcome = "key_rotated"
		if m := c.u.CallbackQuery.Message.Message; m != nil {
			_ = b.tg.edit(ctx, c.chat, m.ID, fmt.Sprintf("Key <b>%s</b> rotated.", esc(k.GetName())), nil)
		}
		b.showSecret(ctx, c, resp.GetKey().GetName(), resp.GetSecret(), true)
		return "Rotated.", nil
	}
	c.outcome = "bad_callback"
	return "Unknown button.", nil
}

// isDigits guards session ids taken from callback data before they name a stored value.
func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
