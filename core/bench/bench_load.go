package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modelgateway/core/wire/rawsock"
)

// loadResult is what the clients saw during one run.
type loadResult struct {
	concurrency int
	elapsed     time.Duration
	requests    int   // successful
	errors      int   // non-200, transport errors, incomplete streams
	chunks      int64 // SSE data events of successful streams, [DONE] excluded
	maxOpen     int64 // most requests in flight at once after their response headers
	latencies   []time.Duration
	errorKinds  map[string]int
}

func (r loadResult) percentile(p float64) time.Duration { return percentile(r.latencies, p) }

// merge adds another run's results; the latencies must be sorted again afterwards.
func (r *loadResult) merge(o loadResult) {
	r.concurrency = o.concurrency
	r.elapsed += o.elapsed
	r.requests += o.requests
	r.errors += o.errors
	r.chunks += o.chunks
	r.maxOpen = max(r.maxOpen, o.maxOpen)
	r.latencies = append(r.latencies, o.latencies...)
	if r.errorKinds == nil {
		r.errorKinds = map[string]int{}
	}
	for k, n := range o.errorKinds {
		r.errorKinds[k] += n
	}
}

// errorSummary lists the distinct failures, most frequent first.
func (r loadResult) errorSummary() string {
	kinds := make([]string, 0, len(r.errorKinds))
	for k := range r.errorKinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return r.errorKinds[b] - r.errorKinds[a] })
	parts := make([]string, 0, 3)
	for i, k := range kinds {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more kinds", len(kinds)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%dx %s", r.errorKinds[k], k))
	}
	if len(parts) == 0 {
		return "no error recorded"
	}
	return strings.Join(parts, "; ")
}

// percentile is the nearest-rank percentile of sorted latencies (0 for none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func newLoadClient(concurrency int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        2 * concurrency,
		MaxIdleConnsPerHost: concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // both proxies see the same bytes the simulator sends
	}}
}

// runLoad runs concurrency clients in a closed loop for d and returns their results with the
// latencies sorted.
func runLoad(ctx context.Context, client *http.Client, t target, concurrency int, d time.Duration) loadResult {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		open    atomic.Int64
		maxOpen atomic.Int64
		res     = loadResult{concurrency: concurrency, errorKinds: map[string]int{}}
	)
	inflight := func(delta int64) {
		n := open.Add(delta)
		for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
		}
	}
	start := time.Now()
	deadline := start.Add(d)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var chunks int64
			kinds := map[string]int{}
			do := func() outcome { return doRequest(ctx, client, t, inflight) }
			if t.form == nil {
				rc := &rawConn{t: t}
				defer rc.close()
				do = func() outcome { return rc.do(inflight) }
			}
			for time.Now().Before(deadline) && ctx.Err() == nil {
				o := do()
				if o.err != "" {
					if ctx.Err() == nil {
						kinds[o.err]++
					}
					continue
				}
				lat = append(lat, o.latency)
				chunks += o.chunks
			}
			mu.Lock()
			defer mu.Unlock()
			res.latencies = append(res.latencies, lat...)
			res.chunks += chunks
			for k, n := range kinds {
				res.errorKinds[k] += n
				res.errors += n
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.requests = len(res.latencies)
	res.maxOpen = maxOpen.Load()
	slices.Sort(res.latencies)
	return res
}

type outcome struct {
	latency time.Duration
	chunks  int64
	err     string // "" on success; short and stable so that failures group
}

// doRequest sends one request and reads its whole answer; streams must end with [DONE].
func doRequest(ctx context.Context, client *http.Client, t target, inflight func(int64)) outcome {
	start := time.Now()
	var body io.Reader = bytes.NewReader(t.body)
	size := int64(len(t.body))
	if t.form != nil {
		body, size = t.form.reader(), t.form.size
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, body)
	if err != nil {
		return outcome{err: err.Error()}
	}
	// Declared, as the SDKs declare it: a generated body would otherwise go chunked.
	req.ContentLength = size
	req.Header = t.header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return outcome{err: "transport: " + err.Error()}
	}
	defer resp.Body.Close()
	if inflight != nil {
		inflight(1)
		defer inflight(-1)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return outcome{err: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))}
	}
	if !t.stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return outcome{err: "read body: " + err.Error()}
		}
		return outcome{latency: time.Since(start)}
	}
	chunks, done, err := countSSE(resp.Body)
	if err != nil {
		return outcome{err: "read stream: " + err.Error()}
	}
	if !done {
		return outcome{err: "stream ended without data: [DONE]"}
	}
	return outcome{latency: time.Since(start), chunks: chunks}
}

// countSSE counts the data events of an SSE body up to its end and tells whether the chat
// terminator "[DONE]" (not counted) was among them.
func countSSE(r io.Reader) (chunks int64, done bool, err error) {
	br := bufio.NewReaderSize(r, 16<<10)
	lineStart := true
	for {
		line, err := br.ReadSlice('\n')
		// Only the start of a line names its field; the rest of an over-long line is skipped.
		if lineStart {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if string(bytes.TrimSpace(data)) == "[DONE]" {
					done = true
				} else {
					chunks++
				}
			}
		}
		lineStart = err == nil
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return chunks, done, nil
		default:
			return chunks, done, err
		}
	}
}

// Processes.

// rawConn is one closed-loop client's keep-alive connection: the request's bytes are built
// once and written as they are, and the answer is read with http.ReadResponse straight from
// the socket. http.Client's per-request goroutine hand-offs would cost the load generator
// more CPU than a bare proxy spends per request, and the point is to saturate the proxy.
type rawConn struct {
	t    target
	req  []byte
	conn net.Conn
	br   *bufio.Reader
}

func (c *rawConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

func (c *rawConn) do(inflight func(int64)) outcome {
	start := time.Now()
	if c.conn == nil {
		u, err := url.Parse(c.t.url)
		if err != nil {
			return outcome{err: err.Error()}
		}
		if c.req == nil {
			var b bytes.Buffer
			fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
			_ = c.t.header.Write(&b)
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(c.t.body))
			b.Write(c.t.body)
			c.req = b.Bytes()
		}
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			return outcome{err: "transport: " + err.Error()}
		}
		conn = rawsock.Wrap(conn) // as the canned upstream's: this core is PostgreSQL's too
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 32<<10)
	}
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return outcome{err: "transport: write"}
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return outcome{err: "transport: read response"}
	}
	defer resp.Body.Close()
	if inflight != nil {
		inflight(1)
		defer inflight(-1)
	}
	if resp.Close {
		defer c.close()
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		c.close() // the rest of the body is not read
		return outcome{err: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))}
	}
	if !c.t.stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			c.close()
			return outcome{err: "read body: " + err.Error()}
		}
		return outcome{latency: time.Since(start)}
	}
	chunks, done, err := countSSE(resp.Body)
	if err != nil {
		c.close()
		return outcome{err: "read stream: " + err.Error()}
	}
	if !done {
		c.close()
		return outcome{err: "stream ended without data: [DONE]"}
	}
	return outcome{latency: time.Since(start), chunks: chunks}
}
