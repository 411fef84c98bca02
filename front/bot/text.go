package bot

import (
	"fmt"
	"html"
	"strings"
)

// Messages are HTML (parse_mode HTML); anything that comes from a user or the gateway goes
// through esc.
const (
	msgUnavailable    = "⚠️ The gateway cannot be reached right now. Your request is kept and will be carried out as soon as it is back; if nothing happens within a few minutes, please try again."
	msgPaymentKept    = "⚠️ Your payment was received; crediting it to your balance is taking longer than usual and will finish by itself. Please do not pay again."
	msgPaymentPending = "⚠️ Your payment was received and recorded, but it could not be credited automatically. The operator has been told and will credit it by hand; please do not pay again."
	msgPrivateOnly    = "Please write to me in a private chat: keys and balances are handled only there."
	msgHint           = "Send /help to see what I can do."
	msgUnknown        = "Unknown command. Send /help to see the commands."
	msgNotYours       = "That is not one of your keys."
	msgGone           = "This request was already handled or has expired."
	msgLimited        = "Too many of those in a short time; please wait a few minutes."
)

func msgFailed(code string) string {
	return fmt.Sprintf("That did not work (%s). Please try again later.", esc(code))
}

func esc(s string) string { return html.EscapeString(s) }

// helpText explains every command and the base URLs per protocol.
func (b *Bot) helpText(operator bool) string {
	base := b.cfg.PublicBaseURL
	var s strings.Builder
	s.WriteString("<b>Commands</b>\n")
	s.WriteString("/newkey [name] — create an API key: choose endpoint families and models, confirm, and get the secret once\n")
	s.WriteString("/keys — your keys (name, prefix, state, endpoints, models, budget and its spend, expiry) with buttons to change, rotate or revoke them\n")
	s.WriteString("/limit &lt;name or prefix&gt; &lt;amount&gt; [day|week|month|total] — cap what a key may spend per period (month when left out); /limit &lt;key&gt; off removes the cap\n")
	s.WriteString("/revoke &lt;name or prefix&gt; — revoke a key (asks for confirmation)\n")
	s.WriteString("/rotate &lt;name or prefix&gt; — replace a key by a new secret with the same policy; the old one stops working\n")
	s.WriteString("/models — the models you can use and their prices\n")
	s.WriteString("/balance — balance and what is available now\n")
	s.WriteString("/usage [key] — the last 7 days by day and model: requests, tokens, cost; and batches\n")
	if b.cfg.StarsRate.IsZero() {
		s.WriteString("/topup &lt;amount&gt; — add funds\n")
	} else {
		s.WriteString("/topup &lt;amount&gt; — add funds, paid in Telegram Stars ⭐\n")
	}
	if operator {
		s.WriteString("\n<b>Operator</b>\n/credit &lt;tg user id or profile id&gt; &lt;amount&gt; — credit (negative: adjust) a balance\n/find &lt;tg user id&gt; — a user's balance and keys\n/refund &lt;telegram_payment_charge_id&gt; — refund a Stars payment: debits the balance first, refused when it no longer covers the payment\n")
	}
	if b.cfg.WebAppURL != "" {
		s.WriteString("\nThe menu button opens a page with your keys, charts of your spending, budgets, top-ups and prices.\n")
	}
	fmt.Fprintf(&s, "\n<b>Base URLs</b>\nOpenAI-compatible (chat completions, responses, embeddings…): <code>%s/v1</code>\n", esc(base))
	fmt.Fprintf(&s, "Anthropic messages: <code>%s</code>\n", esc(base))
	fmt.Fprintf(&s, "Gemini generateContent: <code>%s/v1beta</code> (SDK base URL <code>%s</code>)\n", esc(base), esc(base))
	s.WriteString("\n⚠️ This chat is not end-to-end encrypted. A secret is shown once and its message is deleted after a while; if a key may have leaked, /rotate it.")
	return s.String()
}

// secretText is the only message that ever holds a secret: the secret in a code element and
// copy-ready environment lines per protocol.
func (b *Bot) secretText(name, secret string, rotated bool) string {
	base := esc(b.cfg.PublicBaseURL)
	sec := esc(secret)
	what := "created"
	if rotated {
		what = "rotated; the old secret no longer works"
	}
	return fmt.Sprintf(`🔑 Key <b>%s</b> %s.

<code>%s</code>

This is the only time the secret is shown; this message is deleted in %s.

OpenAI SDKs and tools:
<pre>export OPENAI_BASE_URL=%s/v1
export OPENAI_API_KEY=%s</pre>
Anthropic SDKs and Claude Code:
<pre>export ANTHROPIC_BASE_URL=%s
export ANTHROPIC_API_KEY=%s</pre>
Gemini SDKs and CLI (REST base %s/v1beta):
<pre>export GOOGLE_GEMINI_BASE_URL=%s
export GEMINI_API_KEY=%s</pre>
This chat is not end-to-end encrypted: if the key may have leaked, /rotate it.`,
		esc(name), what, sec, b.cfg.SecretTTL.String(), base, sec, base, sec, base, base, sec)
}

// clip keeps a message under Telegram's 4096 characters, cutting at a line.
func clip(s string) string {
	const max = 3900
	if len(s) <= max {
		return s
	}
	cut := strings.LastIndex(s[:max], "\n")
	if cut < 0 {
		cut = max
	}
	return s[:cut] + "\n…"
}
