package simulator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// KeyEnv is the credential variable of the demo catalogue's providers; the simulator accepts
// any key, so make run sets a placeholder when the variable is empty.
const KeyEnv = "SIMULATOR_API_KEY"

// RevokedKeyEnv is the demo catalogue's second credential of a pool: make run sets it to
// RevokedKey, which the demo simulator refuses (401), to show a pool going on without it.
const RevokedKeyEnv = "SIMULATOR_REVOKED_KEY"

// RevokedKey is the credential the demo simulator refuses.
const RevokedKey = "simulator-revoked"

// Serve starts the upstream simulator on addr and returns its base URL; it stops when ctx
// ends.
func Serve(ctx context.Context, addr string, o Options) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen simulator: %w", err)
	}
	srv := &http.Server{Handler: New(o), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// StartDemo is make run's simulator: paced so that streaming is visible in a terminal.
func StartDemo(ctx context.Context) (string, error) {
	if os.Getenv(KeyEnv) == "" {
		os.Setenv(KeyEnv, "simulator")
	}
	if os.Getenv(RevokedKeyEnv) == "" {
		os.Setenv(RevokedKeyEnv, RevokedKey)
	}
	return Serve(ctx, "127.0.0.1:0", Options{ChunkDelay: 40 * time.Millisecond, PrefixCache: true, RefuseKeys: []string{RevokedKey}})
}

// Main is `gateway simulator`: the simulator on its own (the benchmark's upstream, or for
// experiments).
func Main(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("simulator", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address")
	var o Options
	fs.DurationVar(&o.FirstByteDelay, "first-byte", 0, "delay before the response headers")
	fs.DurationVar(&o.ChunkDelay, "chunk-delay", 0, "delay between streamed chunks")
	fs.IntVar(&o.Words, "words", 12, "words (stream chunks) per answer")
	canned := fs.Bool("canned", false, "replay each distinct request's first answer from memory over a minimal HTTP/1.1 server, unpaced (the benchmark's upstream at saturation)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *canned {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("listen simulator: %w", err)
		}
		fmt.Println("canned simulator serving on", "http://"+ln.Addr().String())
		return ServeCanned(ctx, ln, New(o))
	}
	url, err := Serve(ctx, *addr, o)
	if err != nil {
		return err
	}
	fmt.Println("simulator serving on", url)
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return nil
	}
	return context.Cause(ctx)
}
