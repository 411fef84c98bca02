package bot_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTelegram is the Telegram Bot API as the bot sees it: /bot<token>/<method>, JSON or
// multipart/form-data bodies, answers in the {"ok":..., "result":...} envelope, long-polling
// getUpdates whose offset confirms (and drops) every earlier update, and scripted failures.
type fakeTelegram struct {
	t     testing.TB
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever updates or calls change
	queue   []json.RawMessage
	queueID []int64
	// forced are redelivered updates handed out once whatever the offset: Telegram repeats an
	// update whose confirmation it did not see, and a bot must not act on it twice.
	forced  []json.RawMessage
	nextID  int64
	nextMsg int
	calls   []tgCall
	fail    map[string][]tgFailure
	// hookURL and hookSecret are the webhook set with setWebhook.
	hookURL, hookSecret string
	// refunded are the charge ids refundStarPayment returned: a second refund of one is
	// refused with CHARGE_ALREADY_REFUNDED, as Telegram does.
	refunded map[string]bool
	// lose counts calls per method that take effect and then lose their answer (the
	// connection is closed before the response).
	lose map[string]int
}

// tgCall is one Bot API request as received.
type tgCall struct {
	Method      string
	ContentType string
	Fields      map[string]string
	At          time.Time
	// Answer is what was answered: the result (message id for sent messages) or an error code.
	MessageID int
	ErrorCode int
}

type tgFailure struct {
	code       int
	retryAfter int
}

func newFakeTelegram(t testing.TB, token string) *fakeTelegram {
	f := &fakeTelegram{t: t, token: token, changed: make(chan struct{}), nextID: 1000, nextMsg: 500, fail: map[string][]tgFailure{}, refunded: map[string]bool{}, lose: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTelegram) URL() string { return f.srv.URL }

func (f *fakeTelegram) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// failNext scripts the next call of a method to fail with a Bot API error.
func (f *fakeTelegram) failNext(method string, code, retryAfter int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], tgFailure{code, retryAfter})
}

// push queues an update (the update_id is assigned) and returns its id.
func (f *fakeTelegram) push(update map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	update["update_id"] = f.nextID
	raw, _ := json.Marshal(update)
	f.queue = append(f.queue, raw)
	f.queueID = append(f.queueID, f.nextID)
	f.notify()
	return f.nextID
}

// renumber makes the next update ids start again at next, as Telegram does after a week
// without updates (it then picks the next id at random, so possibly below the last one).
func (f *fakeTelegram) renumber(next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID = next - 1
}

// renumberQueue gives the updates not yet confirmed new ids from next on, as a Telegram that
// renumbered would deliver them.
func (f *fakeTelegram) renumberQueue(next int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, raw := range f.queue {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			f.t.Fatal(err)
		}
		m["update_id"] = json.RawMessage(fmt.Sprint(next))
		f.queue[i], _ = json.Marshal(m)
		f.queueID[i] = next
		next++
	}
	f.nextID = next - 1
	f.notify()
}

// redeliver queues an update again under an id it already had, as Telegram does when it did
// not see the bot confirm it.
func (f *fakeTelegram) redeliver(id int64, update map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	update["update_id"] = id
	raw, _ := json.Marshal(update)
	f.forced = append(f.forced, raw)
	f.notify()
}

func (f *fakeTelegram) apiError(w http.ResponseWriter, code int, desc string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if !ok {
		f.apiError(w, 401, "Unauthorized", 0)
		return
	}
	method := rest
	fields, ctype, err := readFields(r)
	if err != nil {
		f.apiError(w, 400, "Bad Request: "+err.Error(), 0)
		return
	}
	if method == "getUpdates" {
		f.getUpdates(w, r, fields, ctype)
		return
	}
	f.mu.Lock()
	c := tgCall{Method: method, ContentType: ctype, Fields: fields, At: time.Now()}
	if fl := f.fail[method]; len(fl) > 0 {
		f.fail[method] = fl[1:]
		c.ErrorCode = fl[0].code
		f.calls = append(f.calls, c)
		f.notify()
		f.mu.Unlock()
		desc := map[int]string{429: fmt.Sprintf("Too Many Requests: retry after %d", fl[0].retryAfter), 403: "Forbidden: bot was blocked by the user", 400: "Bad Request: PAYMENT_REFUND_FAILED"}[fl[0].code]
		f.apiError(w, fl[0].code, desc, fl[0].retryAfter)
		return
	}
	var result any = true
	switch method {
	case "sendMessage", "sendInvoice":
		if fields["chat_id"] == "" || (method == "sendMessage" && fields["text"] == "") {
			f.mu.Unlock()
			f.apiError(w, 400, "Bad Request: message text is empty", 0)
			return
		}
		f.nextMsg++
		c.MessageID = f.nextMsg
		var chat int64
		fmt.Sscan(fields["chat_id"], &chat)
		result = map[string]any{"message_id": f.nextMsg, "date": time.Now().Unix(), "chat": map[string]any{"id": chat, "type": "private"}, "text": fields["text"]}
	case "editMessageText":
		var chat int64
		fmt.Sscan(fields["chat_id"], &chat)
		var id int
		fmt.Sscan(fields["message_id"], &id)
		c.MessageID = id
		result = map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": map[string]any{"id": chat, "type": "private"}, "text": fields["text"]}
	case "deleteMessage":
		fmt.Sscan(fields["message_id"], &c.MessageID)
	case "answerCallbackQuery", "answerPreCheckoutQuery":
	case "refundStarPayment":
		charge := fields["telegram_payment_charge_id"]
		if fields["user_id"] == "" || charge == "" {
			f.mu.Unlock()
			f.apiError(w, 400, "Bad Request: user_id and telegram_payment_charge_id are required", 0)
			return
		}
		if f.refunded[charge] {
			c.ErrorCode = 400
			f.calls = append(f.calls, c)
			f.notify()
			f.mu.Unlock()
			f.apiError(w, 400, "Bad Request: CHARGE_ALREADY_REFUNDED", 0)
			return
		}
		f.refunded[charge] = true
	case "setChatMenuButton":
		var mb struct {
			Type   string `json:"type"`
			Text   string `json:"text"`
			WebApp struct {
				URL string `json:"url"`
			} `json:"web_app"`
		}
		if err := json.Unmarshal([]byte(fields["menu_button"]), &mb); err != nil || mb.Type == "" || (mb.Type == "web_app" && (mb.Text == "" || mb.WebApp.URL == "")) {
			f.mu.Unlock()
			f.apiError(w, 400, "Bad Request: can't parse menu button", 0)
			return
		}
	case "createInvoiceLink":
		if fields["title"] == "" || fields["payload"] == "" || fields["currency"] == "" || fields["prices"] == "" {
			f.mu.Unlock()
			f.apiError(w, 400, "Bad Request: invoice fields missing", 0)
			return
		}
		f.nextMsg++
		result = fmt.Sprintf("https://t.me/$invoice-%d", f.nextMsg)
	case "setWebhook":
		f.hookURL, f.hookSecret = fields["url"], fields["secret_token"]
	case "getWebhookInfo":
		result = map[string]any{"url": f.hookURL, "has_custom_certificate": false, "pending_update_count": 0, "max_connections": 1}
	default:
		f.mu.Unlock()
		f.apiError(w, 404, "Not Found: method not found", 0)
		return
	}
	f.calls = append(f.calls, c)
	f.notify()
	lost := f.lose[method] > 0
	if lost {
		f.lose[method]--
	}
	f.mu.Unlock()
	if lost {
		// The call took effect; its answer never arrives.
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

// loseNext makes the next call of a method take effect and lose its answer.
func (f *fakeTelegram) loseNext(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose[method]++
}

// readFields decodes a Bot API request body the two ways the Bot API accepts: JSON, and
// multipart/form-data (where objects such as reply_markup are JSON-serialised fields).
func readFields(r *http.Request) (map[string]string, string, error) {
	out := map[string]string{}
	ctype, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ctype {
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, ctype, err
		}
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				out[k] = s
			} else {
				out[k] = string(v)
			}
		}
	case "multipart/form-data":
		body, err := io.ReadAll(r.Body)
		if err != nil || len(body) == 0 {
			// A method without parameters comes with an empty body, as the Bot API allows.
			return out, ctype, err
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, ctype, err
			}
			v, _ := io.ReadAll(p)
			out[p.FormName()] = string(v)
		}
	case "":
	default:
		return nil, ctype, fmt.Errorf("unsupported content type %q", ctype)
	}
	return out, ctype, nil
}

func (f *fakeTelegram) getUpdates(w http.ResponseWriter, r *http.Request, fields map[string]string, ctype string) {
	var offset, timeout int64
	fmt.Sscan(fields["offset"], &offset)
	fmt.Sscan(fields["timeout"], &timeout)
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		f.mu.Lock()
		f.calls = append(f.calls, tgCall{Method: "getUpdates", ContentType: ctype, Fields: fields, At: time.Now()})
		f.notify()
		if fl := f.fail["getUpdates"]; len(fl) > 0 {
			f.fail["getUpdates"] = fl[1:]
			f.calls[len(f.calls)-1].ErrorCode = fl[0].code
			f.notify()
			f.mu.Unlock()
			f.apiError(w, fl[0].code, fmt.Sprintf("Too Many Requests: retry after %d", fl[0].retryAfter), fl[0].retryAfter)
			return
		}
		// The offset confirms every update before it: those are forgotten. An offset far
		// above the newest id is one of an earlier numbering (the Bot API server's queue
		// refuses a from_id "in the future"): it confirms nothing, and the queue is answered
		// from its head.
		var keep []json.RawMessage
		var keepID []int64
		for i, id := range f.queueID {
			if id >= offset || offset > f.nextID+10 {
				keep, keepID = append(keep, f.queue[i]), append(keepID, id)
			}
		}
		f.queue, f.queueID = keep, keepID
		ch := f.changed
		if len(keep) > 0 || len(f.forced) > 0 {
			keep = append(f.forced, keep...)
			f.forced = nil
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"ok":true,"result":[%s]}`, joinRaw(keep))
			return
		}
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true,"result":[]}`)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func joinRaw(rs []json.RawMessage) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, ",")
}

// mark is the number of calls so far; waitCall looks only at later ones.
func (f *fakeTelegram) mark() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// waitCall waits for a call after mark of the method that matches.
func (f *fakeTelegram) waitCall(from int, method string, match func(tgCall) bool) tgCall {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		f.mu.Lock()
		for _, c := range f.calls[from:] {
			if c.Method == method && (match == nil || match(c)) {
				f.mu.Unlock()
				return c
			}
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			f.t.Fatalf("no %s call came within 30 s; calls since: %v", method, f.methodsSince(from))
		}
	}
}

// callsSince returns the calls of a method after mark.
func (f *fakeTelegram) callsSince(from int, method string) []tgCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tgCall
	for _, c := range f.calls[from:] {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeTelegram) methodsSince(from int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls[from:] {
		if c.Method != "getUpdates" {
			out = append(out, fmt.Sprintf("%s(%d)", c.Method, c.ErrorCode))
		}
	}
	return out
}

// queued is the number of updates not yet confirmed by an offset.
func (f *fakeTelegram) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// deliver posts an update to the webhook as Telegram does (with the secret token header) and
// returns the HTTP status; id 0 assigns a fresh update id.
func (f *fakeTelegram) deliver(id int64, update map[string]any, secret string) int {
	f.mu.Lock()
	if id == 0 {
		f.nextID++
		id = f.nextID
	}
	url := f.hookURL
	if secret == "" {
		secret = f.hookSecret
	}
	f.mu.Unlock()
	update["update_id"] = id
	raw, _ := json.Marshal(update)
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("webhook delivery: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitConfirmed waits until the bot polls with an offset past id: it has handled and recorded
// every update up to id.
func (f *fakeTelegram) waitConfirmed(id int64) {
	f.t.Helper()
	f.waitCall(0, "getUpdates", func(c tgCall) bool {
		var off int64
		fmt.Sscan(c.Fields["offset"], &off)
		return off > id
	})
}
