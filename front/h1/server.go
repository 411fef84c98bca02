// Package h1 is a lean HTTP/1.1 server for an http.Handler: one goroutine per connection that
// reuses, from one request to the next, its buffers, its header maps and its response writer,
// and hands every connection it does not speak (HTTP/2 prior knowledge, absolute URIs, folded
// or oversized headers, any framing but Content-Length and chunked) to a net/http server, with
// the bytes it has read, so that those answers stay net/http's own.
//
// It keeps net/http's semantics where the gateway relies on them: the request context is
// cancelled when the client goes away (a background read after the body), Shutdown drains
// like http.Server.Shutdown, Hijack, Flush and read/write deadlines through
// http.ResponseController, Expect: 100-continue, HEAD, HTTP/1.0 and Connection: close.
package h1

import (
	"context"
	"errors"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Server serves HTTP/1.1 on the connections of Serve's listeners.
type Server struct {
	Handler http.Handler
	// ReadHeaderTimeout bounds the request line and headers from their first byte (the
	// first request of a connection: from the accept); 0: none.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long for its next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers as net/http does (plus its 4096
	// bytes of slack); 0: http.DefaultMaxHeaderBytes. A request over it goes to net/http,
	// which answers 431.
	MaxHeaderBytes int
	ErrorLog       *log.Logger

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}
	inShutdown atomic.Bool
	fbOnce     sync.Once
	fb         *http.Server
	fbLn       *chanListener
	fbDone     chan struct{}
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

// fallback starts, once, the net/http server that takes the connections handed over.
func (s *Server) fallback() *chanListener {
	s.fbOnce.Do(func() {
		s.fb = &http.Server{Handler: s.Handler, ReadHeaderTimeout: s.ReadHeaderTimeout, IdleTimeout: s.IdleTimeout,
			MaxHeaderBytes: s.MaxHeaderBytes, ErrorLog: s.ErrorLog}
		s.fbLn = newChanListener()
		s.fbDone = make(chan struct{})
		go func() { defer close(s.fbDone); _ = s.fb.Serve(s.fbLn) }()
	})
	return s.fbLn
}

// Serve accepts connections on l until Shutdown or Close; it returns http.ErrServerClosed then.
func (s *Server) Serve(l net.Listener) error {
	if !s.track(&l, true) {
		return http.ErrServerClosed
	}
	defer s.track(&l, false)
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Anything else (EMFILE, ECONNABORTED) passes: back off as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("h1: accept error: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := newConn(s, nc)
		if !s.trackConn(c, true) {
			_ = nc.Close()
			continue
		}
		go c.serve()
	}
}

func (s *Server) track(l *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.listeners, l)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	if s.listeners == nil {
		s.listeners = map[*net.Listener]struct{}{}
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) trackConn(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, c)
		return true
	}
	if s.inShutdown.Load() {
		return false
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) closeListeners() error {
	var err error
	for l := range s.listeners {
		if cerr := (*l).Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// Shutdown has http.Server.Shutdown's semantics: it closes the listeners, then closes each
// connection as soon as it is idle (between requests, or accepted and silent for 5 s) -
// connections that are serving finish their request and answer with Connection: close -
// and returns when none is left, or ctx's error when ctx ends first. Hijacked connections
// are not its to wait for.
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	lnerr := s.closeListeners()
	fbLn := s.fbLn
	s.mu.Unlock()
	fbErr := make(chan error, 1)
	if fbLn != nil {
		go func() { fbErr <- s.fb.Shutdown(ctx) }()
	} else {
		fbErr <- nil
	}
	// Polled as net/http does: from 1 ms, doubling with jitter, up to 500 ms.
	interval := time.Millisecond
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		if s.closeIdleConns() {
			return errors.Join(lnerr, <-fbErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			interval = min(interval*2, 500*time.Millisecond)
			timer.Reset(interval + time.Duration(rand.Int64N(int64(interval/10)+1)))
		}
	}
}

// closeIdleConns closes the idle connections and reports whether none is left.
func (s *Server) closeIdleConns() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	quiescent := true
	for c := range s.conns {
		st, since := c.getState()
		if st == stateNew && time.Since(since) > 5*time.Second {
			st = stateIdle // accepted but silent: net/http treats it as idle after 5 s
		}
		if st != stateIdle {
			quiescent = false
			continue
		}
		_ = c.nc.Close()
		delete(s.conns, c)
	}
	return quiescent
}

// Close closes the listeners and every connection at once (not the hijacked ones).
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	err := s.closeListeners()
	for c := range s.conns {
		_ = c.nc.Close()
		delete(s.conns, c)
	}
	fb := s.fb
	s.mu.Unlock()
	if fb != nil {
		err = errors.Join(err, fb.Close())
	}
	return err
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// chanListener is the net/http fallback's listener: the connections handed over.
type chanListener struct {
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// hand gives the fallback a connection; false when it no longer accepts.
func (l *chanListener) hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return fallbackAddr{} }

type fallbackAddr struct{}

func (fallbackAddr) Network() string { return "h1-fallback" }
func (fallbackAddr) String() string  { return "h1-fallback" }

// replayConn is a handed-over connection: its reads return first what the lean server had
// read already.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
