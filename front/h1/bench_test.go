package h1

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The server-side cost of one request of make bench scenario 1's shape: a keep-alive client
// posts a ~1 KiB JSON body and reads a ~1 KiB JSON answer; the handler reads the body and
// writes the answer. BenchmarkServer runs the same client against net/http's server and
// this package's. The fasthttp floor that chose this design (12.0 µs against net/http's 32.3 and
// this package's 19.5, client included) was measured by the same client in a module of its own,
// front/h1/fastbench at commit 5745bc8, so that the gateway does not depend on fasthttp; it
// left once measured, as it copied this harness. cpu-µs/op is the process's CPU (user+system) per
// request, client included: the client is the same raw-socket loop for every server, so the
// differences are the servers'.
//
//	go test -run '^$' -bench BenchmarkServer -count 6 ./front/h1/

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

func benchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf [2048]byte
		for {
			if _, err := r.Body.Read(buf[:]); err != nil {
				break
			}
		}
		_ = r.Context().Done() // the gateway's handlers all watch it
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_0123456789abcdef")
		_, _ = w.Write(benchRespBody)
	})
}

func BenchmarkServer(b *testing.B) {
	for _, name := range []string{"raw", "net", "lean"} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var srv interface {
				Serve(net.Listener) error
				Close() error
			}
			switch name {
			case "raw":
				go serveRaw(ln)
				defer ln.Close()
				RunClients(b, ln.Addr().String(), 64, benchRequest())
				return
			case "net":
				srv = &http.Server{Handler: benchHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			case "lean":
				srv = &Server{Handler: benchHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			RunClients(b, ln.Addr().String(), 64, benchRequest())
		})
	}
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

// serveRaw is the floor under every server: per connection, read a head and its
// Content-Length body, write a canned answer. What a server costs is its time above this.
func serveRaw(ln net.Listener) {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: req_0123456789abcdef\r\n" +
		"Date: Sat, 28 Nov 2026 00:00:00 GMT\r\nContent-Length: " + strconv.Itoa(len(benchRespBody)) + "\r\n\r\n" + string(benchRespBody))
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 8192)
			n := 0
			for {
				m, err := c.Read(buf[n:])
				n += m
				if err != nil {
					return
				}
				i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
				if i < 0 {
					continue
				}
				j := bytes.Index(buf[:i+2], clHeader)
				k := bytes.IndexByte(buf[j+len(clHeader):], '\r')
				l, _ := strconv.Atoi(string(buf[j+len(clHeader) : j+len(clHeader)+k]))
				if n < i+4+l {
					continue
				}
				n = copy(buf, buf[i+4+l:n])
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		}()
	}
}
