package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A paced chunked stream waits for its next event with no read buffer (the wait starts with
// br given back); an upstream whose next bytes are there already is read as before, without
// a peek per read. Both answers arrive whole.
func TestAPacedStreamWaitsWithNoReadBuffer(t *testing.T) {
	event := "data: {\"x\":1}\n\n"
	chunk := strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n"
	next := make(chan struct{}, 1)
	wrote := make(chan struct{}, 1)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			path, _, ok := readRequest(br)
			if !ok {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk); err != nil {
				return
			}
			if path.URL.Path == "/paced" {
				<-next // sent once the client waits
			} else {
				time.Sleep(5 * time.Millisecond) // apart from the head's read
			}
			if _, err := io.WriteString(c, chunk+"0\r\n\r\n"); err != nil {
				return
			}
			wrote <- struct{}{}
		}
	})
	var mu sync.Mutex
	var waits, withBuffer int
	waitHook = func(c *conn) {
		mu.Lock()
		waits++
		if c.br != nil {
			withBuffer++
		}
		mu.Unlock()
		// Sent well after the wait began: the paced event is not there at its peek.
		time.AfterFunc(20*time.Millisecond, func() {
			select {
			case next <- struct{}{}:
			default:
			}
		})
	}
	t.Cleanup(func() { waitHook = nil })
	tr, _ := counted(t)
	for _, c := range []struct {
		path  string
		waits int // bufferless waits of the exchange
		fast  bool
	}{{"/paced", 1, false}, {"/fast", 1, true}} { // the second event and the end come together
		waits = 0
		resp, err := tr.RoundTrip(post(t, context.Background(), srv.url()+c.path, ""))
		if err != nil {
			t.Fatal(err)
		}
		b := resp.Body.(*body)

		if c.fast {
			<-wrote // the second event is there before the client reads on
			time.Sleep(10 * time.Millisecond)
		}
		got, err := io.ReadAll(b)
		if err != nil || string(got) != event+event {
			t.Fatalf("%s: %q %v", c.path, got, err)
		}
		if !c.fast {
			<-wrote
		}
		if waits != c.waits || withBuffer != 0 || b.c.fast != c.fast {
			t.Fatalf("%s: %d bufferless waits (%d holding a buffer), fast %v; want %d, 0, %v", c.path, waits, withBuffer, b.c.fast, c.waits, c.fast)
		}
	}
}
