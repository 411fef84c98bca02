package gatewaytest

import (
	"bufio"
	"bytes"
	be "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
)

// StatementCounter sits between replicas and their PostgreSQL and counts the statements they
// send: each simple Query and each extended-protocol Execute, by statement text. It reads the
// wire protocol (frontend messages only) rather than the server's statistics, which a backend
// publishes up to 10 s late, so a test can count what an idle replica does second by second.
type StatementCounter struct {
	// URL is DatabaseURL with its host and port replaced by the counter's.
	URL string

	mu     sync.Mutex
	total  int64
	byText map[string]int64
}

// CountStatements starts a counter in front of dbURL's server; it stops when the test ends.
func CountStatements(t testing.TB, dbURL string) *StatementCounter {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("count statements: %v", err)
	}
	server := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("count statements: %v", err)
	}
	u.Host = ln.Addr().String()
	c := &StatementCounter{URL: u.String(), byText: map[string]int64{}}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, cn := range open {
			cn.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			backend, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			open = append(open, client, backend)
			mu.Unlock()
			conns.Add(2)
			go func() {
				defer conns.Done()
				_, _ = io.Copy(client, backend)
				client.Close()
			}()
			go func() {
				defer conns.Done()
				_ = c.relay(backend, client)
				backend.Close()
			}()
		}
	}()
	return c
}

// Total is the number of statements sent so far.
func (c *StatementCounter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Texts is how many times each statement text was sent so far.
func (c *StatementCounter) Texts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.byText))
	for k, v := range c.byText {
		out[k] = v
	}
	return out
}

// Diff lists the statements sent since before (a Texts result), most frequent first, each
// shortened to one line of at most 120 bytes.
func (c *StatementCounter) Diff(before map[string]int64) string {
	type row struct {
		text string
		n    int64
	}
	var rows []row
	for text, n := range c.Texts() {
		if d := n - before[text]; d > 0 {
			rows = append(rows, row{text, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].text < rows[j].text
	})
	var b strings.Builder
	for _, r := range rows {
		text := strings.Join(strings.Fields(r.text), " ")
		if len(text) > 120 {
			text = text[:120]
		}
		fmt.Fprintf(&b, "%6d  %s\n", r.n, text)
	}
	return b.String()
}

// relay copies the frontend's messages to the server, counting Query and Execute messages.
func (c *StatementCounter) relay(dst io.Writer, src io.Reader) error {
	r := bufio.NewReader(src)
	var head [5]byte
	// Startup phase: untyped messages (an SSL or GSS request, then the startup packet).
	for {
		if _, err := io.ReadFull(r, head[:4]); err != nil {
			return err
		}
		n := be.BigEndian.Uint32(head[:4])
		if n < 8 {
			return errors.New("short startup message")
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		if _, err := dst.Write(append(head[:4:4], body...)); err != nil {
			return err
		}
		code := be.BigEndian.Uint32(body[:4])
		if code != 80877103 && code != 80877104 { // SSLRequest, GSSENCRequest
			break
		}
	}
	prepared := map[string]string{} // statement name -> text
	portal := ""                    // the statement of the last Bind
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		n := be.BigEndian.Uint32(head[1:])
		if n < 4 {
			return errors.New("short message")
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		switch head[0] {
		case 'Q':
			c.count(string(cstring(body, 0)))
		case 'P':
			name := cstring(body, 0)
			prepared[string(name)] = string(cstring(body, len(name)+1))
		case 'B':
			p := cstring(body, 0)
			portal = prepared[string(cstring(body, len(p)+1))]
		case 'E':
			c.count(portal)
		}
		if _, err := dst.Write(append(head[:], body...)); err != nil {
			return err
		}
	}
}

func (c *StatementCounter) count(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	c.byText[text]++
}

// cstring is the NUL-terminated string at b[at:], without its NUL.
func cstring(b []byte, at int) []byte {
	if at >= len(b) {
		return nil
	}
	if i := bytes.IndexByte(b[at:], 0); i >= 0 {
		return b[at : at+i]
	}
	return b[at:]
}
