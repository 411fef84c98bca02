package bench

// The upload scenario of `make bench`: 25 MiB multipart uploads through both proxies, to show
// that the gateway's memory does not grow with the uploads in flight.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// uploadSize is the gateway's limit on a multipart body: the largest upload it takes.
const uploadSize = 25 << 20

// uploadScenario sends transcription forms with the file before the model, as the official SDKs
// do: the gateway cannot route before it has the model, so it stages the file on disk.
func (b *bench) uploadScenario() (scenario, error) {
	upload := func(name, base, model string) (target, error) {
		f, err := newUploadForm(uploadSize, model)
		if err != nil {
			return target{}, err
		}
		header := http.Header{"Authorization": {"Bearer " + b.key}, "Content-Type": {f.contentType}, pacedHeader: {"1"}}
		return target{name: name, url: base + "/v1/audio/transcriptions", form: f, header: header}, nil
	}
	bare, err := upload("bare", b.bareURL, "whisper-1")
	if err != nil {
		return scenario{}, err
	}
	gw, err := upload("gateway", b.gwURL, "bench-whisper")
	if err != nil {
		return scenario{}, err
	}
	return scenario{
		title: fmt.Sprintf("4. %d concurrent %d MiB transcription uploads, file before model: the gateway stages the file (bench-whisper, per request)",
			b.cfg.uploads, uploadSize>>20),
		concurrency: b.cfg.uploads,
		duration:    b.cfg.uploadDuration,
		resetPeak:   true,
		bare:        bare,
		gw:          gw,
	}, nil
}

// uploads runs and prints the upload scenario on freshly started proxies: first each proxy
// alone with one upload in flight, then the measured rounds with all of them. It returns the
// proxies that failed uploads; nextProfile numbers the proxies' CPU profile of the rounds.
func (b *bench) uploads(ctx context.Context, w io.Writer, nextProfile int) (failed []string, err error) {
	s, err := b.uploadScenario()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n%s\n", s.title)
	if err := b.restartProxies(ctx, nextProfile); err != nil {
		return nil, err
	}
	if err := b.probe(ctx, []target{s.bare, s.gw}); err != nil {
		return nil, err
	}
	one, err := b.uploadPeaks(ctx, s, 1, b.cfg.uploadDuration/2)
	if err != nil {
		return nil, err
	}
	res, err := b.scenario(ctx, s, b.cfg.profileDir != "")
	if err != nil {
		return nil, err
	}
	for j := range res {
		if res[j].errors > 0 || one[j].errors > 0 {
			failed = append(failed, "upload scenario "+proxyNames[j])
		}
	}
	b.printUploads(w, one, res)
	return failed, nil
}

// restartProxies starts both proxies afresh, so that the peak RSS of what follows is its own,
// not the heap the earlier scenarios left behind; nextProfile numbers their next CPU profile.
func (b *bench) restartProxies(ctx context.Context, nextProfile int) error {
	var extra []string
	if b.cfg.profileDir != "" {
		time.Sleep(500 * time.Millisecond) // let both finish writing their last profile
		extra = []string{benchProfileFirstEnv + "=" + strconv.Itoa(nextProfile)}
	}
	bare, err := b.restart(b.bare, extra...)
	if err != nil {
		return err
	}
	b.bare = bare
	gw, err := b.restart(b.gw, extra...)
	if err != nil {
		return err
	}
	b.gw = gw
	if err := waitListening(ctx, b.bare, b.bare.addr); err != nil {
		return err
	}
	return b.waitReady(ctx)
}

// uploadPeaks measures each proxy's peak RSS while n clients upload for d, without warmup or
// rounds: what an upload in flight costs in memory, to compare with s.concurrency of them.
func (b *bench) uploadPeaks(ctx context.Context, s scenario, n int, d time.Duration) ([2]phaseResult, error) {
	var res [2]phaseResult
	for j, p := range [2]*child{b.bare, b.gw} {
		t := [2]target{s.bare, s.gw}[j]
		client := newLoadClient(n)
		res[j].peak = resetPeak(p.cmd.Process.Pid)
		res[j].loadResult = runLoad(ctx, client, t, n, d)
		client.CloseIdleConnections()
		if err := ctx.Err(); err != nil {
			return res, context.Cause(ctx)
		}
		var err error
		if res[j].hwm, res[j].rss, err = memory(p.cmd.Process.Pid); err != nil {
			return res, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return res, nil
}

// printUploads prints the measured uploads, then the peaks with one upload in flight (one)
// against those with all of them (res).
func (b *bench) printUploads(w io.Writer, one, res [2]phaseResult) {
	mib := float64(uploadSize) / (1 << 20)
	b.printCommon(w, "   MiB/s  CPU ms/upload  VmHWM MB  VmRSS MB", res, func(r phaseResult) string {
		return fmt.Sprintf("  %6.1f  %13.2f  %8.1f  %8.1f", r.rps()*mib, r.cpuPerReq()/1000, mb(r.hwm), mb(r.rss))
	})
	fmt.Fprintf(w, "  gateway/bare: CPU per upload %.2fx; throughput %.2fx; peak RSS %.2fx\n",
		res[1].cpuPerReq()/res[0].cpuPerReq(), res[1].rps()/res[0].rps(), float64(res[1].hwm)/float64(max(res[0].hwm, 1)))
	for i, r := range one {
		if r.errors > 0 {
			fmt.Fprintf(w, "  !!! %s, 1 upload in flight: %d of %d uploads FAILED: %s\n", proxyNames[i], r.errors, r.requests+r.errors, r.errorSummary())
		}
	}
	if !one[0].peak.done || !one[1].peak.done || !res[0].peak.done || !res[1].peak.done {
		fmt.Fprintf(w, "  peak RSS not measured per phase: this kernel does not reset VmHWM (/proc/<pid>/clear_refs)\n")
		return
	}
	fmt.Fprintf(w, "  peak RSS (VmHWM, from VmRSS at the phase's start) with 1 upload in flight (%d and %d uploads): bare %.1f MB (from %.1f), gateway %.1f MB (from %.1f)\n",
		one[0].requests, one[1].requests, mb(one[0].hwm), mb(one[0].peak.base), mb(one[1].hwm), mb(one[1].peak.base))
	fmt.Fprintf(w, "  peak RSS with %d in flight (the measured rounds above): bare %.1f MB (from %.1f), gateway %.1f MB (from %.1f)\n",
		res[1].concurrency, mb(res[0].hwm), mb(res[0].peak.base), mb(res[1].hwm), mb(res[1].peak.base))
	if n := res[1].concurrency; n > 1 {
		per := (mb(res[1].hwm) - mb(one[1].hwm)) / float64(n-1)
		fmt.Fprintf(w, "  gateway peak RSS per upload in flight beyond the first: %+.1f MB (a buffered upload would add %.0f; target < %.1f MB: %s)\n",
			per, mib, mib/10, verdict(per < mib/10))
	}
}

// uploadForm is a multipart transcription form of an exact size, file part first as the SDKs
// send it, generated while it is read: all clients copy from one small shared block, so the
// load generator holds no upload in memory and the form costs it a copy per byte.
type uploadForm struct {
	head, tail  string
	fileSize    int64
	size        int64 // of the whole form
	contentType string
}

// uploadBoundary cannot occur in the file: uploadBlock never repeats a byte value twice in a
// row, so it never spells the "--" that begins a delimiter.
const uploadBoundary = "gateway-bench-upload-boundary"

// uploadBlock is the file's content, over and over: bytes 0..255. Made at the first upload,
// not at init: every command of the binary (serve too) ran this package's inits, and kept
// the 64 KiB for its life.
var uploadBlock = sync.OnceValue(func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i)
	}
	return b
})

// newUploadForm lays out a form of exactly size bytes: a file part called "file", then the
// model field.
func newUploadForm(size int64, model string) (*uploadForm, error) {
	head := "--" + uploadBoundary + "\r\n" +
		"Content-Disposition: form-data; name=\"file\"; filename=\"bench.mp3\"\r\n" +
		"Content-Type: audio/mpeg\r\n\r\n"
	tail := "\r\n--" + uploadBoundary + "\r\n" +
		"Content-Disposition: form-data; name=\"model\"\r\n\r\n" + model + "\r\n" +
		"--" + uploadBoundary + "--\r\n"
	fileSize := size - int64(len(head)+len(tail))
	if fileSize < 0 {
		return nil, fmt.Errorf("upload form of %d bytes: the parts alone take %d", size, len(head)+len(tail))
	}
	return &uploadForm{head: head, tail: tail, fileSize: fileSize, size: size,
		contentType: "multipart/form-data; boundary=" + uploadBoundary}, nil
}

// reader returns the whole form from its start.
func (f *uploadForm) reader() io.Reader {
	return io.MultiReader(strings.NewReader(f.head), io.LimitReader(&blockReader{}, f.fileSize), strings.NewReader(f.tail))
}

// blockReader repeats uploadBlock without end.
type blockReader struct{ off int }

func (r *blockReader) Read(p []byte) (int, error) {
	block := uploadBlock()
	n := copy(p, block[r.off:])
	r.off = (r.off + n) % len(block)
	return n, nil
}
