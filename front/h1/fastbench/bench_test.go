// Package fastbench is the fasthttp floor of front/h1's BenchmarkServer: the same client
// and the same request against fasthttp with a native handler. A module of its own, so that
// the gateway does not depend on fasthttp for a measurement.
//
//	cd front/h1/fastbench && go test -run '^$' -bench . -count 6
package fastbench

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The harness below is front/h1/bench_test.go's, copied.

var (
	benchReqBody  = bytes.Repeat([]byte(`{"k":"vvvvvvvvvv"},`), 60)[:1000]
	benchRespBody = bytes.Repeat([]byte(`{"a":"bbbbbbbbbb"},`), 60)[:1024]
)

// benchRequest is what an OpenAI SDK sends, near enough.
func benchRequest() []byte {
	body := append(append([]byte(`{"model":"m","messages":[`), benchReqBody...), `]}`...)
	return []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: OpenAI/Python 1.54.0\r\n" +
		"Accept: application/json\r\nAccept-Encoding: gzip, deflate\r\nAuthorization: Bearer sk-test-0123456789abcdef0123456789abcdef\r\n" +
		"Content-Type: application/json\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.54.0\r\n" +
		"X-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\nX-Stainless-Runtime: CPython\r\nConnection: keep-alive\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}

func BenchmarkServer(b *testing.B) {
	b.Run("fasthttp", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &fasthttp.Server{
			Handler: func(ctx *fasthttp.RequestCtx) {
				_ = ctx.PostBody()
				ctx.SetContentType("application/json")
				ctx.Response.Header.Set("X-Request-Id", "req_0123456789abcdef")
				ctx.SetBody(benchRespBody)
			},
			ReadTimeout: 0, IdleTimeout: 2 * time.Minute,
		}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Shutdown()
		RunClients(b, ln.Addr().String(), 64, benchRequest())
	})
}

// RunClients drives b.N requests over conns keep-alive connections, each its own goroutine
// writing req and reading an answer framed by Content-Length, and reports the process's CPU
// per request.
func RunClients(b *testing.B, addr string, conns int, req []byte) {
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		cs[i] = c
		if err := roundTrip(c, req, make([]byte, 8192)); err != nil { // warm the connection
			b.Fatal(err)
		}
	}
	var next int64
	var mu sync.Mutex
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next <= int64(b.N)
	}
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8192)
			for take() {
				if err := roundTrip(c, req, buf); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu := cpuTime() - before
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var clHeader = []byte("\r\nContent-Length: ")

// roundTrip writes req and reads one answer, which must be a 200 with a Content-Length.
func roundTrip(c net.Conn, req, buf []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	n, headEnd, want := 0, -1, -1
	for {
		m, err := c.Read(buf[n:])
		n += m
		if headEnd < 0 {
			if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
				headEnd = i + 4
				if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
					return fmt.Errorf("answer %q", buf[:headEnd])
				}
				j := bytes.Index(buf[:headEnd], clHeader)
				if j < 0 {
					return fmt.Errorf("no Content-Length in %q", buf[:headEnd])
				}
				k := bytes.IndexByte(buf[j+len(clHeader):], '\r')
				l, _ := strconv.Atoi(string(buf[j+len(clHeader) : j+len(clHeader)+k]))
				want = headEnd + l
			}
		}
		if want >= 0 && n >= want {
			if n > want {
				return fmt.Errorf("%d bytes more than the answer", n-want)
			}
			return nil
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
}
