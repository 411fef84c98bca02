package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpEndpoint is the configured OTLP endpoint; export is off without one (contract.md).
func otlpEndpoint(getenv func(string) string) string {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}

// protocol is OTEL_EXPORTER_OTLP_{signal}_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else the
// specification's default http/protobuf. The exporters read the other standard variables
// (endpoint, headers, timeout, certificates) themselves.
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return p, nil
	}
	return "", fmt.Errorf("OTLP protocol %q is not supported (http/protobuf or grpc)", p)
}

func spanExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	p, err := protocol(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	if p == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return exp, nil
}

func metricExporter(ctx context.Context, getenv func(string) string) (sdkmetric.Exporter, error) {
	p, err := protocol(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if p == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP metric exporter: %w", err)
	}
	return exp, nil
}
