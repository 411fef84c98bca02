package h1

import (
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// parsed is what parse found beyond the *http.Request.
type parsed struct {
	req      *http.Request
	chunked  bool
	expect   bool // Expect: 100-continue
	closeReq bool
	http10   bool
}

// parse turns c.head into the request; false: something only net/http should answer.
func (c *conn) parse() (p parsed, ok bool) {
	// One string for the whole head: every method, path, key and value is a slice of it.
	head := string(c.head)
	eol := strings.IndexByte(head, '\n')
	line := strings.TrimSuffix(head[:eol], "\r")
	if eol == len(head)-1 {
		return p, false // a blank line where the request line should be
	}
	rest := head[eol+1:]
	sp1 := strings.IndexByte(line, ' ')
	if sp1 <= 0 {
		return p, false
	}
	method, line := line[:sp1], line[sp1+1:]
	sp2 := strings.IndexByte(line, ' ')
	if sp2 <= 0 {
		return p, false
	}
	uri, proto := line[:sp2], line[sp2+1:]
	var minor int
	switch proto {
	case "HTTP/1.1":
		minor = 1
	case "HTTP/1.0":
		p.http10 = true
	default:
		return p, false
	}
	if !validMethod(method) || uri[0] != '/' || !validURI(uri) {
		return p, false
	}
	c.url = url.URL{}
	if q := strings.IndexByte(uri, '?'); q >= 0 {
		c.url.Path, c.url.RawQuery = uri[:q], uri[q+1:]
	} else {
		c.url.Path = uri
	}
	if strings.IndexByte(c.url.Path, '%') >= 0 {
		u, err := url.ParseRequestURI(uri)
		if err != nil {
			return p, false
		}
		c.url = *u
	}

	h := c.reqHdr
	clear(h)
	n := strings.Count(rest, "\n")
	if cap(c.hdrVals) < n {
		c.hdrVals = make([]string, n)
	}
	vals := c.hdrVals[:n]
	var host, cl, te string
	var hosts, cls, tes int
	var connClose, connKeepAlive, connSeen bool
	for len(rest) > 0 {
		eol := strings.IndexByte(rest, '\n')
		if eol < 0 {
			break
		}
		kv := strings.TrimSuffix(rest[:eol], "\r")
		rest = rest[eol+1:]
		if kv == "" {
			break
		}
		colon := strings.IndexByte(kv, ':')
		if colon <= 0 || kv[0] == ' ' || kv[0] == '\t' {
			return p, false // folded or malformed: net/http's 400
		}
		key, ok := canonicalKey(kv[:colon])
		if !ok {
			return p, false
		}
		v := strings.Trim(kv[colon+1:], " \t")
		if !httpguts.ValidHeaderFieldValue(v) {
			return p, false
		}
		switch key {
		case "Host":
			host, hosts = v, hosts+1
			continue // net/http moves it to r.Host
		case "Content-Length":
			cl, cls = v, cls+1
		case "Transfer-Encoding":
			te, tes = v, tes+1
			continue // net/http moves it to r.TransferEncoding
		case "Connection":
			connClose = connClose || hasToken(v, "close")
			// An HTTP/1.0 keep-alive is asked by the first Connection header alone: net/http
			// reads it with Header.get (wantsHttp10KeepAlive), a close from any of them.
			if !connSeen {
				connKeepAlive, connSeen = hasToken(v, "keep-alive"), true
			}
		case "Expect":
			if !strings.EqualFold(v, "100-continue") {
				return p, false // net/http answers 417
			}
			p.expect = true
		}
		vs := h[key]
		if vs == nil {
			vals[0] = v
			h[key] = vals[:1:1]
			vals = vals[1:]
		} else {
			h[key] = append(vs, v)
		}
	}
	if hosts > 1 || (hosts == 0 && !p.http10) || cls > 1 || tes > 1 || !httpguts.ValidHostHeader(host) {
		return p, false
	}
	if p.http10 && p.expect {
		p.expect = false // net/http ignores Expect on HTTP/1.0
	}
	var contentLength int64
	switch {
	case tes > 0:
		if !strings.EqualFold(te, "chunked") || cls > 0 || p.http10 {
			return p, false
		}
		p.chunked, contentLength = true, -1
	case cls == 1:
		v, ok := parseContentLength(cl)
		if !ok {
			return p, false
		}
		contentLength = v
	}
	p.closeReq = connClose || (p.http10 && !connKeepAlive)

	c.tmpl = http.Request{
		Method: method, URL: &c.url, Proto: proto, ProtoMajor: 1, ProtoMinor: minor,
		Header: h, ContentLength: contentLength, Host: host, RemoteAddr: c.remoteAddr, RequestURI: uri,
		Close: p.closeReq,
	}
	if p.chunked {
		c.tmpl.TransferEncoding = chunkedTE
	}
	if contentLength == 0 {
		c.tmpl.Body = http.NoBody
	} else {
		c.tmpl.Body = &c.body
	}
	c.body.reset(contentLength, p.chunked, p.expect)
	return p, true
}

var chunkedTE = []string{"chunked"}

func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		if !isTokenByte(m[i]) {
			return false
		}
	}
	return true
}

func isTokenByte(b byte) bool {
	return b < 0x80 && tokenTable[b]
}

var tokenTable = func() (t [128]bool) {
	for b := '0'; b <= '9'; b++ {
		t[b] = true
	}
	for b := 'a'; b <= 'z'; b++ {
		t[b] = true
		t[b-'a'+'A'] = true
	}
	for _, b := range "!#$%&'*+-.^_`|~" {
		t[b] = true
	}
	return t
}()

// canonicalKey validates a header name and returns its canonical form (no allocation when
// it is canonical already, as clients send them).
func canonicalKey(k string) (string, bool) {
	upper := true
	canonical := true
	for i := 0; i < len(k); i++ {
		b := k[i]
		if !isTokenByte(b) {
			return "", false
		}
		if upper && 'a' <= b && b <= 'z' || !upper && 'A' <= b && b <= 'Z' {
			canonical = false
		}
		upper = b == '-'
	}
	if canonical {
		return k, true
	}
	return http.CanonicalHeaderKey(k), true
}

// validURI: what the fast path takes without url.ParseRequestURI - printable ASCII, no
// fragment (net/http refuses control characters and spaces; anything else goes to it).
func validURI(u string) bool {
	for i := 0; i < len(u); i++ {
		if b := u[i]; b <= ' ' || b >= 0x7f || b == '#' {
			return false
		}
	}
	return true
}

func parseContentLength(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// hasToken is net/http's: whether v holds token (any case) between spaces, tabs or commas.
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	if v == token {
		return true
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !isTokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !isTokenBoundary(v[end]) {
			continue
		}
		if strings.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func isTokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
