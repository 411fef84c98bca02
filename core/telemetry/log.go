package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// NewLogger is the process logger: JSON lines (text when format is "text") at level ("debug",
// "info", "warn", "error"; info when empty). A record logged with a context that carries a
// span gets its trace_id and span_id.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if level != "" {
		if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
			return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "", "json":
		// The access lines bypass the handler, into the same writer (jsonline.go).
		jl := &jsonLines{w: w}
		return slog.New(traceHandler{Handler: slog.NewJSONHandler(lockedWriter{jl}, opts), json: jl}), nil
	case "text":
		return slog.New(traceHandler{Handler: slog.NewTextHandler(w, opts)}), nil
	}
	return nil, fmt.Errorf("log format %q: want json or text", format)
}

// traceHandler adds the trace and span ids of the record's context.
type traceHandler struct {
	slog.Handler
	// json is the writer of a JSON handler without attributes or groups of its own: lines
	// formatted by lineWriter go there.
	json *jsonLines
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{Handler: h.Handler.WithGroup(name)}
}
