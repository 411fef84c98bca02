// Package pgproxy is a TCP proxy for fault tests: it sits between a gateway replica and
// PostgreSQL and can freeze (stop forwarding while keeping every connection open, as a network
// partition does), cut (drop every connection at once), and refuse new connections (a
// database that is down), each undone at will.
package pgproxy

import (
	"fmt"
	"net"
	"net/url"
	"sync"
)

// Proxy forwards connections accepted on a loopback port to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	open    chan struct{} // closed while forwarding; replaced by a fresh one on Freeze
	refuse  bool
	conns   map[*pair]struct{}
	accepts int
	closed  bool
	wg      sync.WaitGroup
}

// pair is one proxied connection: the client's side and the server's.
type pair struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed with the pair
}

func (p *pair) close() {
	p.once.Do(func() {
		p.client.Close()
		p.server.Close()
		close(p.done)
	})
}

// Start listens on a free loopback port and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{ln: ln, target: target, open: open, conns: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL rewrites a connection string so that it goes through the proxy.
func (p *Proxy) URL(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("proxy url: %w", err)
	}
	u.Host = p.Addr()
	return u.String(), nil
}

// TargetOf is the host:port a connection string points at.
func TargetOf(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", fmt.Errorf("target of url: %w", err)
	}
	return u.Host, nil
}

// Freeze stops forwarding in both directions; connections stay open and new ones are accepted
// but carry nothing until Thaw. Bytes in flight are held, not lost (unless Cut drops them).
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already frozen
	}
}

// Thaw resumes forwarding.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Cut closes every proxied connection at once; what they held is dropped.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Down makes the database unreachable: every connection is cut and new ones are closed as
// soon as they are accepted, until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	p.refuse = true
	p.mu.Unlock()
	p.Cut()
}

// Up accepts connections again (and thaws a frozen proxy).
func (p *Proxy) Up() {
	p.mu.Lock()
	p.refuse = false
	p.mu.Unlock()
	p.Thaw()
}

// Accepted counts the connections accepted so far, refused ones included.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Cut()
	p.Thaw() // wakes the copiers waiting at the gate
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepts++
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	c := &pair{client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.refuse {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.copy(c, server, client); done <- struct{}{} }()
	go func() { p.copy(c, client, server); done <- struct{}{} }()
	<-done
	c.close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// copy forwards src to dst a read at a time, waiting at the gate before each write, so that a
// frozen proxy holds what it has read.
func (p *Proxy) copy(c *pair, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			// EOF or a failure: PostgreSQL's protocol needs no half-close, so either ends
			// the pair.
			return
		}
	}
}

// wait blocks while the proxy is frozen; false when the pair was cut meanwhile (its copier
// holds bytes already read and would otherwise wait for a thaw that may never come).
func (p *Proxy) wait(c *pair) bool {
	p.mu.Lock()
	gate := p.open
	p.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-c.done:
		return false
	}
}
