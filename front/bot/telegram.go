package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// telegram is the Bot API edge. Methods go through github.com/go-telegram/bot (typed
// parameters, multipart bodies as the Bot API accepts them); getUpdates is a plain call here,
// because the library's polling loop confirms an update's offset as soon as it is received,
// before it is handled, and ignores retry_after: neither fits a bot that must not lose an
// update while the gateway is down and must honour 429s.
type telegram struct {
	api    *tgbot.Bot
	base   string // {TELEGRAM_API_URL}/bot{token}/; never logged
	token  string
	client *http.Client // getUpdates
	// maxRetries bounds how often one call waits out a 429's retry_after.
	maxRetries int
}

func newTelegram(apiURL, token string) (*telegram, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	api, err := tgbot.New(token,
		tgbot.WithServerURL(apiURL),
		tgbot.WithSkipGetMe(),
		tgbot.WithHTTPClient(30*time.Second, client),
		// The library reports its own failures here; their text may hold a response body, so
		// only the redacted kind is kept.
		tgbot.WithErrorsHandler(func(error) {}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram client: %s", redact(err, token))
	}
	return &telegram{
		api: api, base: strings.TrimRight(apiURL, "/") + "/bot" + token + "/", token: token,
		client: &http.Client{}, maxRetries: 5,
	}, nil
}

// apiError is a Bot API failure reduced to what may be logged: the method, the HTTP-style
// error code and, for 429, retry_after. Descriptions and bodies are dropped: they may quote
// message text.
type apiError struct {
	Method     string
	Code       int
	RetryAfter int
	kind       string
}

func (e *apiError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.kind)
	}
	return fmt.Sprintf("telegram %s: %s", e.Method, e.kind)
}

// classify turns any error of a Bot API call into an apiError whose text is safe to log: the
// token is in every request URL, so url.Errors are rebuilt without it.
func classify(method string, err error, token string) *apiError {
	var tm *tgbot.TooManyRequestsError
	var ue *url.Error
	switch {
	case errors.As(err, &tm):
		return &apiError{Method: method, Code: 429, RetryAfter: tm.RetryAfter, kind: "too many requests"}
	case errors.Is(err, tgbot.ErrorForbidden):
		return &apiError{Method: method, Code: 403, kind: "forbidden"}
	case errors.Is(err, tgbot.ErrorBadRequest):
		return &apiError{Method: method, Code: 400, kind: "bad request"}
	case errors.Is(err, tgbot.ErrorUnauthorized):
		return &apiError{Method: method, Code: 401, kind: "unauthorized"}
	case errors.Is(err, tgbot.ErrorNotFound):
		return &apiError{Method: method, Code: 404, kind: "not found"}
	case errors.Is(err, tgbot.ErrorConflict):
		return &apiError{Method: method, Code: 409, kind: "conflict"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Method: method, kind: "timed out or canceled"}
	case errors.As(err, &ue):
		return &apiError{Method: method, kind: "network: " + redact(ue.Err, token)}
	}
	return &apiError{Method: method, kind: "failed"}
}

// redact removes the token from an error's text.
func redact(err error, token string) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if token != "" {
		s = strings.ReplaceAll(s, token, "<token>")
	}
	return s
}

// call runs one Bot API method, waiting out 429s for their retry_after (a few times at most).
func (t *telegram) call(ctx context.Context, method string, f func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		ae := classify(method, err, t.token)
		if ae.Code != 429 || attempt >= t.maxRetries {
			return ae
		}
		if err := sleep(ctx, retryAfter(ae.RetryAfter)); err != nil {
			return ae
		}
	}
}

func retryAfter(sec int) time.Duration {
	if sec < 1 {
		sec = 1
	}
	return time.Duration(sec) * time.Second
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// send posts an HTML message; protect marks a message holding a secret (no forwarding, no
// saving).
func (t *telegram) send(ctx context.Context, chat int64, html string, markup models.ReplyMarkup, protect bool) (*models.Message, error) {
	var msg *models.Message
	err := t.call(ctx, "sendMessage", func(ctx context.Context) error {
		var err error
		msg, err = t.api.SendMessage(ctx, &tgbot.SendMessageParams{
			ChatID: chat, Text: html, ParseMode: models.ParseModeHTML, ReplyMarkup: markup, ProtectContent: protect,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: tgbot.True()},
		})
		return err
	})
	return msg, err
}

// edit replaces a message's text and keyboard.
func (t *telegram) edit(ctx context.Context, chat int64, msgID int, html string, markup models.ReplyMarkup) error {
	return t.call(ctx, "editMessageText", func(ctx context.Context) error {
		_, err := t.api.EditMessageText(ctx, &tgbot.EditMessageTextParams{
			ChatID: chat, MessageID: msgID, Text: html, ParseMode: models.ParseModeHTML, ReplyMarkup: markup,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: tgbot.True()},
		})
		return err
	})
}

func (t *telegram) answerCallback(ctx context.Context, id, text string) error {
	return t.call(ctx, "answerCallbackQuery", func(ctx context.Context) error {
		_, err := t.api.AnswerCallbackQuery(ctx, &tgbot.AnswerCallbackQueryParams{CallbackQueryID: id, Text: text})
		return err
	})
}

func (t *telegram) deleteMessage(ctx context.Context, chat int64, msgID int) error {
	return t.call(ctx, "deleteMessage", func(ctx context.Context) error {
		_, err := t.api.DeleteMessage(ctx, &tgbot.DeleteMessageParams{ChatID: chat, MessageID: msgID})
		return err
	})
}

func (t *telegram) sendInvoice(ctx context.Context, p *tgbot.SendInvoiceParams) error {
	return t.call(ctx, "sendInvoice", func(ctx context.Context) error {
		_, err := t.api.SendInvoice(ctx, p)
		return err
	})
}

func (t *telegram) answerPreCheckout(ctx context.Context, id string, ok bool, errMsg string) error {
	return t.call(ctx, "answerPreCheckoutQuery", func(ctx context.Context) error {
		_, err := t.api.AnswerPreCheckoutQuery(ctx, &tgbot.AnswerPreCheckoutQueryParams{PreCheckoutQueryID: id, OK: ok, ErrorMessage: errMsg})
		return err
	})
}

// errAlreadyRefunded is Telegram's answer to a refund of a charge it refunded before: for a
// refund retried after its answer was lost, the refund is done.
var errAlreadyRefunded = errors.New("telegram refundStarPayment: charge already refunded")

// refundStarPayment returns a Stars payment to its payer.
func (t *telegram) refundStarPayment(ctx context.Context, user int64, charge string) error {
	var already bool
	err := t.call(ctx, "refundStarPayment", func(ctx context.Context) error {
		_, err := t.api.RefundStarPayment(ctx, &tgbot.RefundStarPaymentParams{UserID: user, TelegramPaymentChargeID: charge})
		// Telegram's description is the only place that says so; nothing else of it is kept.
		already = err != nil && strings.Contains(err.Error(), "CHARGE_ALREADY_REFUNDED")
		return err
	})
	if already {
		return errAlreadyRefunded
	}
	return err
}

// refused says whether Telegram answered a call with a refusal (a 4xx other than 429): the
// same call would be refused again. Anything else (network, timeout, 5xx, 429 after its
// retries) may have taken effect or may work later.
func refused(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code >= 400 && ae.Code < 500 && ae.Code != 429
}

// allowedUpdates are the update kinds the bot handles.
var allowedUpdates = []string{"message", "callback_query", "pre_checkout_query"}

// getUpdates long-polls for updates after offset. A 429 comes back as an apiError with its
// retry_after for the caller to wait out.
func (t *telegram) getUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]*models.Update, error) {
	body, _ := json.Marshal(map[string]any{"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": allowedUpdates})
	ctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, &apiError{Method: "getUpdates", kind: "bad request url"}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, classify("getUpdates", err, t.token)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, classify("getUpdates", err, t.token)
	}
	var r struct {
		OK         bool             `json:"ok"`
		Result     []*models.Update `json:"result"`
		ErrorCode  int              `json:"error_code"`
		Parameters struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &apiError{Method: "getUpdates", Code: resp.StatusCode, kind: "undecodable answer"}
	}
	if !r.OK {
		return nil, &apiError{Method: "getUpdates", Code: r.ErrorCode, RetryAfter: r.Parameters.RetryAfter, kind: "refused"}
	}
	return r.Result, nil
}
