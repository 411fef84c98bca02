// Package h1 is a lean HTTP/1.1 client: an http.RoundTripper that runs each exchange in
// the caller's goroutine on pooled connections, with none of net/http.Transport's
// per-connection goroutines and channel hand-offs. It serves what the gateway sends its
// upstreams (requests whose bodies are already encoded); everything else goes to Fallback.
package h1

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"modelgateway/core/wire/clock"
	"modelgateway/core/wire/rawsock"
)

// Defaults of the zero Transport, net/http's where it has one.
const (
	DefaultDialTimeout         = 10 * time.Second
	DefaultKeepAlive           = 30 * time.Second
	DefaultTLSHandshakeTimeout = 10 * time.Second
	DefaultIdleConnTimeout     = 90 * time.Second
	DefaultMaxIdleConns        = 1024
	DefaultMaxIdleConnsPerHost = 256
)

// staleCheckAfter is how long a connection must have been idle before it is checked (one
// non-blocking peek) before reuse: at once. The peek finds a server's close, and bytes an
// upstream sent after its answer's end in a later packet, which the release at the answer's
// end could not see; reused unchecked, those would be read as the next request's answer, a
// request of another key holder perhaps (the pool is per host, not per credential). Tests set
// a longer time to reach the retry behind it.
const staleCheckAfter = time.Nanosecond

// Transport is an http.RoundTripper for HTTP/1.1 over TCP or TLS. The zero value is usable
// (without a Fallback, requests it does not serve fail). Its fields must not change once it
// is in use.
type Transport struct {
	// Fallback serves the requests this transport does not: a proxy (Proxy), Expect:
	// 100-continue, request trailers or upgrades, credentials in the URL, a body of unknown
	// length declared as 0, schemes other than http and https, non-ASCII hosts.
	Fallback http.RoundTripper
	// Proxy, when it names a proxy for a request, sends the request to Fallback. It is
	// asked once per scheme and host (http.ProxyFromEnvironment reads only those).
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext dials TCP; nil is a net.Dialer with DefaultDialTimeout and DefaultKeepAlive.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSClientConfig is cloned for each https connection; its ServerName defaults to the
	// host, and its NextProtos are always "http/1.1".
	TLSClientConfig     *tls.Config
	TLSHandshakeTimeout time.Duration
	MaxIdleConns        int
	MaxIdleConnsPerHost int
	IdleConnTimeout     time.Duration
	// DisableCompression stops the transport asking for gzip. Otherwise, like net/http, it
	// sends Accept-Encoding: gzip when the request names no encoding (and no Range, and is
	// not HEAD), and decompresses a gzip answer, which then has no Content-Encoding and
	// Content-Length and has Uncompressed set.
	DisableCompression bool
	// ResponseHeaders, when not nil, names (in canonical form) the only fields an answer's
	// Header carries besides those that frame it (Connection, Content-Length,
	// Content-Encoding, Transfer-Encoding, which the transport reads): a client that reads a
	// few of the twenty-odd fields an API answers with then has no string, slice and map
	// room made for the rest. Set before the first request.
	ResponseHeaders []string

	keepOnce sync.Once
	keep     map[string]bool // ResponseHeaders and the framing fields; nil: every field

	mu    sync.Mutex
	idle  map[connKey][]*conn // most recently used last
	nidle int

	proxyMu sync.RWMutex
	proxied map[connKey]bool

	// sessions resumes TLS sessions on new connections (when TLSClientConfig has no cache of
	// its own): without HTTP/2 a burst opens a connection per request in flight, and a
	// resumed handshake costs a fraction of a full one.
	sessionsOnce sync.Once
	sessions     tls.ClientSessionCache

	staleCheckAfter time.Duration // staleCheckAfter when 0; tests set it
}

// kept is the set of fields answers keep (ResponseHeaders), nil for all.
func (t *Transport) kept() map[string]bool {
	t.keepOnce.Do(func() {
		if t.ResponseHeaders == nil {
			return
		}
		t.keep = map[string]bool{"Connection": true, "Content-Length": true, "Content-Encoding": true, "Transfer-Encoding": true}
		for _, k := range t.ResponseHeaders {
			t.keep[http.CanonicalHeaderKey(k)] = true
		}
	})
	return t.keep
}

// connKey names a pool: the scheme and the URL's host as written.
type connKey struct {
	https bool
	host  string
}

var defaultDialer = &net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: DefaultKeepAlive}

var errNoFallback = errors.New("h1: the request needs the fallback transport, and there is none")

// RoundTrip sends req and reads the answer's head; the body reads from the connection,
// which returns to the pool when the body has been read to its end. The request's context
// ends a dial, a write or a read in progress at once (its connection is closed).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.lean(req) {
		if t.Fallback == nil {
			closeBody(req)
			return nil, errNoFallback
		}
		return t.Fallback.RoundTrip(req)
	}
	if err := validate(req); err != nil {
		closeBody(req)
		return nil, err
	}
	ctx := req.Context()
	key := connKey{https: req.URL.Scheme == "https", host: req.URL.Host}
	trace := httptrace.ContextClientTrace(ctx)
	compress := !t.DisableCompression && req.Method != http.MethodHead &&
		first(req.Header["Accept-Encoding"]) == "" && first(req.Header["Range"]) == ""
	for fresh := false; ; fresh = true {
		if ctx.Err() != nil {
			closeBody(req)
			return nil, fmt.Errorf("h1: %w", cause(ctx))
		}
		c, err := t.getConn(ctx, key, req.URL, trace, fresh)
		if err != nil {
			closeBody(req)
			if ctx.Err() != nil { // the dial's error says only "canceled"
				err = fmt.Errorf("h1: %w (%v)", cause(ctx), err)
			}
			return nil, err
		}
		resp, retry, err := c.roundTrip(ctx, req, trace, compress)
		if err == nil || !retry || fresh {
			return resp, err
		}
		// The server closed the reused connection before answering (it had closed it while
		// idle): send again on a new connection, as net/http does, if the body can be.
		body, gerr := rewind(req)
		if gerr != nil {
			return nil, err
		}
		r2 := *req
		r2.Body = body
		req = &r2
	}
}

// lean reports whether this transport serves req itself.
func (t *Transport) lean(req *http.Request) bool {
	u := req.URL
	if u == nil || u.Host == "" || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if req.Method == http.MethodConnect || len(req.Trailer) > 0 {
		return false
	}
	// net/http probes such a body for its length; a request that needs that goes there.
	if req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody {
		return false
	}
	if te := req.TransferEncoding; len(te) > 0 && (len(te) != 1 || te[0] != "chunked") {
		return false
	}
	if _, ok := req.Header["Expect"]; ok {
		return false
	}
	if _, ok := req.Header["Upgrade"]; ok {
		return false
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= 0x80 { // IDNA: net/http converts
			return false
		}
	}
	return !t.viaProxy(req)
}

// viaProxy reports whether Proxy sends req's host elsewhere, remembering the answer.
func (t *Transport) viaProxy(req *http.Request) bool {
	if t.Proxy == nil {
		return false
	}
	key := connKey{https: req.URL.Scheme == "https", host: req.URL.Host}
	t.proxyMu.RLock()
	v, ok := t.proxied[key]
	t.proxyMu.RUnlock()
	if ok {
		return v
	}
	u, err := t.Proxy(req)
	v = u != nil || err != nil // an error is the fallback's to report
	t.proxyMu.Lock()
	if t.proxied == nil {
		t.proxied = map[connKey]bool{}
	}
	if len(t.proxied) < 4096 {
		t.proxied[key] = v
	}
	t.proxyMu.Unlock()
	return v
}

// validate refuses what net/http refuses to send: a bad method, header name or value, or
// Host (a CR LF in any of them would split the request).
func validate(req *http.Request) error {
	if req.Method != "" && !httpguts.ValidHeaderFieldName(req.Method) {
		return fmt.Errorf("h1: invalid method %q", req.Method)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c == 0x7f || c == '/' {
			return fmt.Errorf("h1: invalid Host %q", host)
		}
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("h1: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				// The value may be a credential: not quoted.
				return fmt.Errorf("h1: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// first is Header.Get for a canonical key, without canonicalizing it again.
func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func rewind(req *http.Request) (io.ReadCloser, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req.Body, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("h1: the body cannot be sent again")
	}
	return req.GetBody()
}

// getConn takes the most recently used idle connection to key, or dials one (always when
// fresh).
func (t *Transport) getConn(ctx context.Context, key connKey, u *url.URL, trace *httptrace.ClientTrace, fresh bool) (*conn, error) {
	if !fresh {
		if c, idleFor := t.takeIdle(key); c != nil {
			if trace != nil && trace.GotConn != nil {
				trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: true, WasIdle: true, IdleTime: idleFor})
			}
			return c, nil
		}
	}
	c, err := t.dial(ctx, key, u)
	if err != nil {
		return nil, err
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.nc})
	}
	return c, nil
}

func (t *Transport) takeIdle(key connKey) (*conn, time.Duration) {
	for {
		t.mu.Lock()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil, 0
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		t.nidle--
		c.inPool = false
		t.mu.Unlock()
		c.idleTimer.Stop()
		idleFor := time.Duration(clock.Mono() - c.idleAt)
		check := t.staleCheckAfter
		if check == 0 {
			check = staleCheckAfter
		}
		if idleFor >= t.idleTimeout() || (idleFor >= check && !c.peeker.alive(c.raw)) {
			c.close()
			continue
		}
		c.reused = true
		return c, idleFor
	}
}

// put pools a connection whose answer was read to its end; false when the pool is full
// (the connection is then closed).
func (t *Transport) put(c *conn) bool {
	perHost, total := t.MaxIdleConnsPerHost, t.MaxIdleConns
	if perHost <= 0 {
		perHost = DefaultMaxIdleConnsPerHost
	}
	if total <= 0 {
		total = DefaultMaxIdleConns
	}
	t.mu.Lock()
	list := t.idle[c.key]
	if len(list) >= perHost || t.nidle >= total {
		t.mu.Unlock()
		c.close()
		return false
	}
	if t.idle == nil {
		t.idle = map[connKey][]*conn{}
	}
	c.inPool = true
	c.idleAt = clock.Mono()
	t.idle[c.key] = append(list, c)
	t.nidle++
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(t.idleTimeout(), c.expire)
	} else {
		c.idleTimer.Reset(t.idleTimeout())
	}
	t.mu.Unlock()
	return true
}

// expire closes a connection idle for IdleConnTimeout.
func (c *conn) expire() {
	t := c.t
	t.mu.Lock()
	// Taken (and perhaps pooled again) since the timer fired: not this idle period's.
	if !c.inPool || time.Duration(clock.Mono()-c.idleAt) < t.idleTimeout() {
		t.mu.Unlock()
		return
	}
	list := t.idle[c.key]
	for i, x := range list {
		if x == c {
			t.idle[c.key] = append(list[:i], list[i+1:]...)
			list[len(list)-1] = nil
			t.nidle--
			break
		}
	}
	c.inPool = false
	t.mu.Unlock()
	c.close()
}

// CloseIdleConnections closes the pooled connections, and the fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nidle = nil, 0
	for _, list := range idle {
		for _, c := range list {
			c.inPool = false
		}
	}
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.idleTimer.Stop()
			c.close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout > 0 {
		return t.IdleConnTimeout
	}
	return DefaultIdleConnTimeout
}

// dial opens a connection to u's host: TCP, then TLS for https.
func (t *Transport) dial(ctx context.Context, key connKey, u *url.URL) (*conn, error) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if key.https {
			port = "443"
		}
	}
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	raw, err := dial(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	raw = rawsock.Wrap(raw)
	c := newConn(t, key, raw)
	if key.https {
		var cfg *tls.Config
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		} else {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		if cfg.ClientSessionCache == nil {
			t.sessionsOnce.Do(func() { t.sessions = tls.NewLRUClientSessionCache(0) })
			cfg.ClientSessionCache = t.sessions
		}
		cfg.NextProtos = []string{"http/1.1"}
		timeout := t.TLSHandshakeTimeout
		if timeout <= 0 {
			timeout = DefaultTLSHandshakeTimeout
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("h1: TLS handshake with %s: %w", host, err)
		}
		st := tc.ConnectionState()
		c.nc, c.tls = tc, &st
	}
	return c, nil
}
