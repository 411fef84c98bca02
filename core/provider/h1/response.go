package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MaxHeaderBytes bounds one response head (status line and header lines), as net/http's
// server bounds a request's: an upstream that sends more is broken or hostile.
const MaxHeaderBytes = 1 << 20

// maxLine bounds one chunk-size or trailer line.
const maxLine = 4096

// max1xx bounds the informational answers skipped before the final one, as net/http does.
const max1xx = 5

var (
	errHeaderTooLarge = errors.New("h1: response header exceeds 1 MiB")
	errMalformed      = errors.New("h1: malformed response")
)

func malformed(what string, line []byte) error {
	if len(line) > 64 {
		line = line[:64]
	}
	return fmt.Errorf("%w: %s %q", errMalformed, what, line)
}

// head is a parsed response head. Its strings share one allocation: the header keys and
// values are cut out of one string made of the connection's scratch buffer.
type head struct {
	status      int
	statusText  string // "200 OK"
	minor       int    // HTTP/1.minor
	header      http.Header
	closeAfter  bool // the connection must not be reused after this answer
	contentLen  int64
	chunked     bool
	hasCL       bool
	keepAlive10 bool // HTTP/1.0 with Connection: keep-alive
}

// field is one header line's key and value as offsets into the scratch buffer.
type field struct{ k0, k1, v0, v1 int }

// parser reads response heads; its buffers are the connection's, reused across answers.
type parser struct {
	buf    []byte  // keys and values of the head being read
	fields []field // their offsets
	long   []byte  // a line longer than the bufio.Reader's buffer
	// keep is the set of fields kept (Transport.ResponseHeaders), nil for all; the others
	// are checked as any field and dropped.
	keep map[string]bool
	// room is where the next final head's values go when they fit (the answer's allocation).
	room []string
}

// readLine reads one line without its CR LF (a bare LF is accepted, as net/http does),
// charging its length to *budget. The slice is valid until the next read.
func (p *parser) readLine(br *bufio.Reader, budget *int, tooLong error) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		p.long = append(p.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(p.long) > *budget {
				return nil, tooLong
			}
			line, err = br.ReadSlice('\n')
			p.long = append(p.long, line...)
		}
		line = p.long
	}
	if *budget -= len(line); *budget < 0 {
		return nil, tooLong
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readHead reads one response head into h. io.EOF means the connection ended before its
// first byte.
func (p *parser) readHead(br *bufio.Reader, h *head) error {
	budget := MaxHeaderBytes
	line, err := p.readLine(br, &budget, errHeaderTooLarge)
	if err != nil {
		return err
	}
	*h = head{contentLen: -1}
	if err := h.parseStatus(line); err != nil {
		return err
	}
	p.buf, p.fields = p.buf[:0], p.fields[:0]
	dropped := false // the last field read was not kept: so is its continuation
	for {
		line, err := p.readLine(br, &budget, errHeaderTooLarge)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// An obsolete line folding continues the previous value (RFC 9112 5.2: replace
			// it by a space), which is the last thing in buf.
			if len(p.fields) == 0 && !dropped {
				return malformed("continuation before the first header", line)
			}
			v := trimOWS(line)
			if !validValue(v) {
				return malformed("header value", line)
			}
			if dropped {
				continue
			}
			f := &p.fields[len(p.fields)-1]
			if len(v) > 0 {
				if f.v1 > f.v0 {
					p.buf = append(p.buf, ' ')
				}
				p.buf = append(p.buf, v...)
				f.v1 = len(p.buf)
			}
			continue
		}
		colon := -1
		for i, c := range line {
			if c == ':' {
				colon = i
				break
			}
		}
		if colon <= 0 || !validKey(line[:colon]) {
			return malformed("header line", line)
		}
		v := trimOWS(line[colon+1:])
		if !validValue(v) {
			return malformed("header value", line)
		}
		var f field
		f.k0 = len(p.buf)
		p.buf = appendCanonical(p.buf, line[:colon])
		f.k1 = len(p.buf)
		if dropped = p.keep != nil && !p.keep[string(p.buf[f.k0:f.k1])]; dropped {
			p.buf = p.buf[:f.k0]
			continue
		}
		f.v0 = f.k1
		p.buf = append(p.buf, v...)
		f.v1 = len(p.buf)
		p.fields = append(p.fields, f)
	}
	h.header = p.header()
	return h.frame()
}

// header builds the http.Header of the fields read: one string for every key and value,
// one backing array for the value slices, common keys interned.
func (p *parser) header() http.Header {
	hd := make(http.Header, len(p.fields))
	if len(p.fields) == 0 {
		return hd
	}
	s := string(p.buf)
	var values []string
	if len(p.fields) <= cap(p.room) {
		values, p.room = p.room[:len(p.fields)], nil
	} else {
		values = make([]string, len(p.fields))
	}
	for i, f := range p.fields {
		key, ok := commonKeys[string(p.buf[f.k0:f.k1])]
		if !ok {
			key = s[f.k0:f.k1]
		}
		values[i] = s[f.v0:f.v1]
		if prev, ok := hd[key]; ok {
			hd[key] = append(prev, values[i])
		} else {
			hd[key] = values[i : i+1 : i+1]
		}
	}
	return hd
}

// parseStatus reads "HTTP/1.x NNN reason".
func (h *head) parseStatus(line []byte) error {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || (line[7] != '0' && line[7] != '1') {
		return malformed("status line", line)
	}
	h.minor = int(line[7] - '0')
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return malformed("status code", line)
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return malformed("status code", line)
	}
	var reason []byte
	switch {
	case len(line) == 12:
	case line[12] == ' ':
		reason = line[13:]
	default:
		return malformed("status line", line)
	}
	h.status = code
	if code < len(statusTexts) && statusTexts[code] != "" && string(reason) == statusTexts[code][4:] {
		h.statusText = statusTexts[code]
	} else {
		h.statusText = strconv.Itoa(code) + " " + string(reason)
	}
	return nil
}

// frame reads the body framing and the connection's fate from the header (RFC 9112 6.3).
func (h *head) frame() error {
	if v, ok := h.header["Connection"]; ok {
		if hasToken(v, "close") {
			h.closeAfter = true
		}
		h.keepAlive10 = hasToken(v, "keep-alive")
	}
	if h.minor == 0 && !h.keepAlive10 {
		h.closeAfter = true
	}
	if te, ok := h.header["Transfer-Encoding"]; ok && h.minor >= 1 {
		// Like net/http: chunked is the only coding a client must accept, and any other
		// leaves the body's end unknown.
		if len(te) != 1 || !equalFold(te[0], "chunked") {
			return fmt.Errorf("%w: unsupported transfer encoding %q", errMalformed, te)
		}
		h.chunked = true
		delete(h.header, "Transfer-Encoding")
		delete(h.header, "Content-Length") // RFC 9112 6.3: chunked overrides a length
		return nil
	}
	if cl, ok := h.header["Content-Length"]; ok {
		n, err := parseContentLength(cl)
		if err != nil {
			return err
		}
		h.contentLen, h.hasCL = n, true
	}
	return nil
}

func parseContentLength(cl []string) (int64, error) {
	first := trimOWSString(cl[0])
	for _, v := range cl[1:] {
		if trimOWSString(v) != first {
			return 0, fmt.Errorf("%w: conflicting Content-Length %q", errMalformed, cl)
		}
	}
	if first == "" || len(first) > 18 {
		return 0, fmt.Errorf("%w: bad Content-Length %q", errMalformed, first)
	}
	var n int64
	for i := 0; i < len(first); i++ {
		c := first[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad Content-Length %q", errMalformed, first)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// statusTexts holds "NNN Text" for every code net/http names, so that the usual status
// line costs no allocation.
var statusTexts = func() [600]string {
	var t [600]string
	for code := range t {
		if s := http.StatusText(code); s != "" {
			t[code] = strconv.Itoa(code) + " " + s
		}
	}
	return t
}()

// commonKeys interns the header keys upstreams send on every answer.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept-Ranges", "Access-Control-Allow-Origin", "Age", "Alt-Svc", "Cache-Control",
		"Cf-Cache-Status", "Cf-Ray", "Connection", "Content-Encoding", "Content-Length",
		"Content-Type", "Date", "Etag", "Expires", "Keep-Alive", "Last-Modified", "Location",
		"Openai-Organization", "Openai-Processing-Ms", "Openai-Version", "Retry-After",
		"Retry-After-Ms", "Request-Id", "Server", "Set-Cookie", "Strict-Transport-Security",
		"Transfer-Encoding", "Vary", "Via", "X-Content-Type-Options", "X-Request-Id",
		"X-Ratelimit-Limit-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Requests",
		"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens",
		"Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining",
		"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Tokens-Limit",
		"Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset",
		"Anthropic-Organization-Id", "X-Envoy-Upstream-Service-Time", "Server-Timing",
	} {
		m[k] = k
	}
	return m
}()

// tokenTable marks the bytes of an RFC 9110 token (a header name).
var tokenTable = func() [256]bool {
	var t [256]bool
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func validKey(k []byte) bool {
	for _, c := range k {
		if !tokenTable[c] {
			return false
		}
	}
	return len(k) > 0
}

// validValue refuses control bytes other than HTAB, as net/http does.
func validValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// appendCanonical appends the canonical form of a valid key (textproto's): upper case
// first and after each hyphen, lower case elsewhere.
func appendCanonical(dst, k []byte) []byte {
	upper := true
	for _, c := range k {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	return dst
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func trimOWSString(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func equalFold(s, t string) bool {
	s = trimOWSString(s)
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// hasToken reports whether a comma-separated header (every value) names token, which is in
// lower case.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			if equalFold(part, token) {
				return true
			}
		}
	}
	return false
}
