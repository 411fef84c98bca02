package rpc

import (
	"sync"

	"google.golang.org/grpc"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// InProcess is the front → core hop of the streaming RPCs, the one place where a client's
// HTTP request enters core. The front's handlers (front/relay, front/media, realtime) call
// its methods in their own goroutine with their sinks as the server-side streams, so core's
// handlers write straight into the HTTP response: no per-call goroutine, no channel
// hand-offs, no copies. Each call runs through Interceptor, the same stream interceptors as
// on the gRPC socket. Unary calls (key checks, counting, the catalogue) take the in-process
// gRPC channel instead.
type InProcess struct {
	Server      *CoreServer
	Interceptor grpc.StreamServerInterceptor

	// calls counts the streams running: after the drain bound they are cut, and the ledger
	// closes only once they have queued their records (Wait).
	calls sync.WaitGroup
}

// Generate runs CoreService.Generate for the front; it implements relay.GenerateFunc.
func (p *InProcess) Generate(req *corev1.GenerateRequest, stream corev1.CoreService_GenerateServer) error {
	return p.run(corev1.CoreService_Generate_FullMethodName, stream, func() error { return p.Server.Generate(req, stream) })
}

// Forward runs CoreService.Forward for the front; it implements media.ForwardFunc.
func (p *InProcess) Forward(stream corev1.CoreService_ForwardServer) error {
	return p.run(corev1.CoreService_Forward_FullMethodName, stream, func() error { return p.Server.Forward(stream) })
}

// Realtime runs CoreService.Realtime for the front; it implements realtime.SessionFunc.
func (p *InProcess) Realtime(stream corev1.CoreService_RealtimeServer) error {
	return p.run(corev1.CoreService_Realtime_FullMethodName, stream, func() error { return p.Server.Realtime(stream) })
}

// Wait returns when no call is running.
func (p *InProcess) Wait() { p.calls.Wait() }

func (p *InProcess) run(method string, stream grpc.ServerStream, call func() error) error {
	p.calls.Add(1)
	defer p.calls.Done()
	info := &grpc.StreamServerInfo{FullMethod: method, IsServerStream: true, IsClientStream: method != corev1.CoreService_Generate_FullMethodName}
	return p.Interceptor(p.Server, stream, info, func(any, grpc.ServerStream) error { return call() })
}
