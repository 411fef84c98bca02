package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"

	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/rpc"
	"modelgateway/core/snapshot"
	"modelgateway/core/statusdata"
	"modelgateway/core/store"
	"modelgateway/core/verify"
	"modelgateway/front/status"
)

// statusFlags are the status site's settings (contract.md, "Status site and docs").
type statusFlags struct {
	PublicBaseURL string
	BotURL        string
	ProbeInterval time.Duration
}

// minProbeInterval keeps the probe from hammering upstreams on a typo ("5s" for "5m").
const minProbeInterval = 10 * time.Second

func (c *Config) statusFlags() (statusFlags, error) {
	f := statusFlags{PublicBaseURL: os.Getenv("GATEWAY_PUBLIC_BASE_URL"), BotURL: os.Getenv("GATEWAY_BOT_URL")}
	if v := os.Getenv("GATEWAY_STATUS_PROBE_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minProbeInterval {
			return f, fmt.Errorf("GATEWAY_STATUS_PROBE_INTERVAL=%q: want a duration of at least %s, e.g. 5m", v, minProbeInterval)
		}
		f.ProbeInterval = d
	}
	return f, nil
}

// statusSite is the status site's core half (recorder, reader, probe) and its front.
type statusSite struct {
	rec    *statusdata.Recorder
	server *rpc.StatusServer
	probe  *statusdata.Probe
	done   chan struct{}
}

func newStatusSite(st *store.Store, holder *snapshot.Holder, prober *verify.Prober, flags statusFlags, log *slog.Logger) *statusSite {
	rec := &statusdata.Recorder{Store: st, Log: log.With("component", "status")}
	// The chat bot component reads the bot's last ReportBotHealth call.
	s := &statusSite{rec: rec, done: make(chan struct{}),
		server: &rpc.StatusServer{Reader: &statusdata.Reader{Store: st, Snapshots: holder.Current, BotHeartbeat: botHeartbeat(st)}}}
	if flags.ProbeInterval > 0 {
		host, _ := os.Hostname()
		s.probe = &statusdata.Probe{Store: st, Snapshots: holder.Current, Prober: prober, Recorder: rec, Interval: flags.ProbeInterval,
			Holder: fmt.Sprintf("%s/%d/%d", host, os.Getpid(), time.Now().UnixNano()), Log: log.With("component", "status-probe")}
	}
	return s
}

func (s *statusSite) register(reg grpc.ServiceRegistrar) {
	statusv1.RegisterStatusServiceServer(reg, s.server)
}

// handler puts /status and /docs in front of the client routes.
func (s *statusSite) handler(conn grpc.ClientConnInterface, flags statusFlags, httpAddr string, next http.Handler, log *slog.Logger) (http.Handler, error) {
	base := flags.PublicBaseURL
	if base == "" {
		base = "http://" + httpAddr
	}
	h, err := status.New(status.Config{Status: statusv1.NewStatusServiceClient(conn), BaseURL: base, BotURL: flags.BotURL, Log: log})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, p := range status.Paths {
		mux.Handle(p, h)
	}
	mux.Handle("/", next)
	return mux, nil
}

// run flushes the counts (and probes, when enabled) until ctx ends; done closes after the
// last flush.
func (s *statusSite) run(ctx context.Context) {
	if s.probe != nil {
		go s.probe.Run(ctx)
	}
	go func() { defer close(s.done); s.rec.Run(ctx, 0) }()
}

// botHeartbeat reads when the chat bot last reported its health; the zero time when it never
// did.
func botHeartbeat(st *store.Store) statusdata.BotHeartbeat {
	return func(ctx context.Context) (time.Time, error) {
		h, _, err := st.GetBotHealth(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return time.Time{}, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		return h.LastReportTime, nil
	}
}
