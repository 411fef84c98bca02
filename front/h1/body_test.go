package h1

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// Ready is true exactly when the next Read cannot wait for the client: a body that ended, or
// a Content-Length body with bytes buffered; never while a chunked body's decoder or an owed
// 100 Continue may need the client.
func TestBodyReady(t *testing.T) {
	for _, tc := range []struct {
		name            string
		sent            string
		peek            int // bytes buffered before the check
		length          int64
		chunked, expect bool
		want            bool
	}{
		{"length, buffered", "hello", 5, 5, false, false, true},
		{"length, nothing buffered", "hello", 0, 5, false, false, false},
		{"empty", "", 0, 0, false, false, true},
		{"chunked, buffered", "5\r\nhello\r\n0\r\n\r\n", 5, -1, true, false, false},
		{"expect, buffered", "hello", 5, 5, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// bgRunning: the end of the body starts no background read here.
			c := &conn{br: bufio.NewReader(strings.NewReader(tc.sent)), bgRunning: true}
			if tc.peek > 0 {
				if _, err := c.br.Peek(tc.peek); err != nil {
					t.Fatal(err)
				}
			}
			c.body.c = c
			c.body.reset(tc.length, tc.chunked, tc.expect)
			if got := c.body.Ready(); got != tc.want {
				t.Fatalf("Ready %v, want %v", got, tc.want)
			}
			if tc.expect {
				return // a 100 Continue would be written
			}
			if _, err := io.ReadAll(&c.body); err != nil {
				t.Fatal(err)
			}
			if !c.body.Ready() {
				t.Fatal("not Ready after the end")
			}
		})
	}
}
