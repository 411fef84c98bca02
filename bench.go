package main

import (
	"context"
	"errors"
)

// cmdBench measures the gateway against a bare reverse proxy; it lands with the benchmark.
func cmdBench(context.Context, []string) error { return errors.New("bench: not built yet") }

// cmdBareProxy is the benchmark's plain httputil.ReverseProxy.
func cmdBareProxy(context.Context, []string) error { return errors.New("bare-proxy: not built yet") }
