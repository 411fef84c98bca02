package telemetry

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/callmd"
)

// ServerOptions are the gRPC listener's: an access record per call (its line and its count,
// like an HTTP request's), and a server span per call when tracing is on. Give them before the
// error interceptors, so that the calls are seen with their final status.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(t.unary), grpc.ChainStreamInterceptor(t.stream)}
	if t.tracingOn {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(t.tp),
			otelgrpc.WithPropagators(t.propagator),
			otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		)))
	}
	return opts
}

func (t *Telemetry) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	a := &access{start: time.Now(), grpc: true, method: "GRPC", path: info.FullMethod}
	resp, err := handler(context.WithValue(ctx, accessKey{}, a), req)
	t.finishCall(ctx, a, err)
	return resp, err
}

func (t *Telemetry) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	a := &access{start: time.Now(), grpc: true, method: "GRPC", path: info.FullMethod}
	err := handler(srv, ctxStream{ss, context.WithValue(ss.Context(), accessKey{}, a)})
	t.finishCall(ss.Context(), a, err)
	return err
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func (t *Telemetry) finishCall(ctx context.Context, a *access, err error) {
	a.end = time.Now()
	a.span = trace.SpanContextFromContext(ctx)
	a.requestID = callmd.Value(ctx, rpc.MetadataRequestID)
	a.status = http.StatusOK
	if err != nil {
		e := apistatus.FromError(err)
		a.code, a.status = e.Code, e.HTTPStatus()
	}
	t.finish(a)
}
