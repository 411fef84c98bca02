package rpc

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/callmd"
)

// InProcess is the front → core hop of the streaming RPCs, the one place where a client's
// HTTP request enters core. The front's handlers (front/relay, front/media, realtime) call
// its methods in their own goroutine with their sinks as the server-side streams, so core's
// handlers write straight into the HTTP response: no per-call goroutine, no channel
// hand-offs, no copies. Each call makes the checks of the stream interceptors on the gRPC
// socket (StreamErrorInterceptor's error mapping outermost, then KeyLimiter.Stream's limits),
// as direct calls: the interceptor chain cost a handler closure per interceptor and one for
// the call, and an indirect call each, on every request. Unary calls (key checks, counting,
// the catalogue) take the in-process gRPC channel instead.
type InProcess struct {
	Server *CoreServer
	// Log is where failures that are not the spec's errors are logged (toStatus, as
	// StreamErrorInterceptor); nil: slog's default.
	Log *slog.Logger
	// Limiter admits each call against its key's limits (KeyLimiter.Stream); nil: none.
	Limiter *KeyLimiter

	// calls counts the streams running: after the drain bound they are cut, and the ledger
	// closes only once they have queued their records (Wait).
	calls sync.WaitGroup
	// running is calls' count, which a WaitGroup does not tell: the shutdown line says it.
	running atomic.Int64
}

// Generate runs CoreService.Generate for the front; it implements relay.GenerateFunc.
func (p *InProcess) Generate(req *corev1.GenerateRequest, stream corev1.CoreService_GenerateServer) error {
	return p.run(generateMethod, stream, func(as authenticated) error { return p.Server.generate(req, stream, as) })
}

// Forward runs CoreService.Forward for the front; it implements media.ForwardFunc.
func (p *InProcess) Forward(stream corev1.CoreService_ForwardServer) error {
	return p.run(forwardMethod, stream, func(authenticated) error { return p.Server.Forward(stream) })
}

// Realtime runs CoreService.Realtime for the front; it implements realtime.SessionFunc.
func (p *InProcess) Realtime(stream corev1.CoreService_RealtimeServer) error {
	return p.run(realtimeMethod, stream, func(authenticated) error { return p.Server.Realtime(stream) })
}

// Wait returns when no call is running.
func (p *InProcess) Wait() { p.calls.Wait() }

// Running is the number of calls running now.
func (p *InProcess) Running() int64 { return p.running.Load() }

// The streams' method names, as the interceptors see them.
const (
	generateMethod = corev1.CoreService_Generate_FullMethodName
	forwardMethod  = corev1.CoreService_Forward_FullMethodName
	realtimeMethod = corev1.CoreService_Realtime_FullMethodName
)

// run calls handler after the checks, counted among the calls running, with the caller's key
// when the limits found it. handler is the one closure of the call, over the request and the
// front's stream; nothing here keeps it, so it stays on the caller's stack.
func (p *InProcess) run(method string, stream grpc.ServerStream, handler func(authenticated) error) error {
	p.calls.Add(1)
	p.running.Add(1)
	defer func() { p.running.Add(-1); p.calls.Done() }()
	if err := p.limited(method, stream, handler); err != nil {
		// What StreamErrorInterceptor makes of it: the spec's error as a status, anything
		// else logged and mapped.
		log := p.Log
		if log == nil {
			log = slog.Default()
		}
		return toStatus(stream.Context(), log, method, err)
	}
	return nil
}

// limited is KeyLimiter.Stream around handler: the key's limits admit the call (their
// headers sent either way) and the call's share is released when handler returns. The key
// the limits found goes to handler when they read the server's own snapshots.
func (p *InProcess) limited(method string, stream grpc.ServerStream, handler func(authenticated) error) error {
	if p.Limiter == nil {
		return handler(authenticated{})
	}
	release, md, as, err := p.Limiter.admitCaller(stream.Context(), method)
	if md != nil {
		_ = stream.SetHeader(md)
	}
	if err != nil {
		return err
	}
	defer release()
	if p.Server == nil || p.Limiter.Snapshots != p.Server.Snapshots {
		as = authenticated{}
	}
	return handler(as)
}

// DirectCore is the front's CoreService client: Authorize, which every priced request makes
// before its body is read, calls the server in the caller's goroutine through Interceptors
// (the in-process channel's unary chain, outermost first), and every other method goes over
// the channel (CoreServiceClient). The channel would start a goroutine, a cancellable
// context and a channel per call, and copy both messages; the chain around Authorize is
// composed once, not per call.
type DirectCore struct {
	corev1.CoreServiceClient
	Server       corev1.CoreServiceServer
	Interceptors []grpc.UnaryServerInterceptor

	once      sync.Once
	authorize grpc.UnaryHandler
}

var authorizeInfo = &grpc.UnaryServerInfo{FullMethod: corev1.CoreService_Authorize_FullMethodName}

// Authorize implements corev1.CoreServiceClient.
func (c *DirectCore) Authorize(ctx context.Context, req *corev1.AuthorizeRequest, _ ...grpc.CallOption) (*corev1.AuthorizeResponse, error) {
	c.once.Do(func() {
		c.authorize = Compose(authorizeInfo, func(ctx context.Context, req any) (any, error) {
			return c.Server.Authorize(ctx, req.(*corev1.AuthorizeRequest))
		}, c.Interceptors...)
	})
	resp, err := c.authorize(serverContext(ctx), req)
	if err != nil {
		return nil, err
	}
	return resp.(*corev1.AuthorizeResponse), nil
}

// serverContext is the context a handler sees for an in-process call, as on the channel: the
// caller's deadline and cancellation and its outgoing metadata as incoming, none of its
// values (the server must not depend on what the caller's context happens to carry).
func serverContext(ctx context.Context) context.Context {
	if srv, ok := callmd.ServerContext(ctx); ok {
		return srv // the front's metadata, not copied
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		return callmd.NewServerContext(ctx, md) // read without copies (firstMD)
	}
	return callmd.NoValues{Context: ctx}
}
