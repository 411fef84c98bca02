package telemetry

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
)

// ServerOptions are the gRPC server's: a server span per call when tracing is on.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	if !t.tracingOn {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(t.propagator),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	))}
}
