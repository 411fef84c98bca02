package telemetry

import (
	"fmt"
	"strconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultTraceRatio is the share of new traces kept when OTEL_TRACES_SAMPLER is unset: a
// sampled request's spans cost about a tenth of its CPU (mostly their OTLP encoding), so by
// default one new trace in ten is kept; a caller's sampled traceparent is always followed.
const DefaultTraceRatio = 0.1

// sampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the specification defines
// them. The gateway decides sampling itself when a request arrives (its span context carries
// the decision into logs and client spans), so it needs the sampler, not only the SDK.
func sampler(getenv func(string) string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		arg := getenv("OTEL_TRACES_SAMPLER_ARG")
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q is not a ratio between 0 and 1", arg)
		}
		return r, nil
	}
	switch name := getenv("OTEL_TRACES_SAMPLER"); name {
	case "":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(DefaultTraceRatio)), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER %q is not supported", name)
	}
}
