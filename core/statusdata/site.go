package statusdata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc"

	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/verify"
)

// Site is the status site's core half as the binary runs it: the recorder that counts, the
// StatusService that reads the counts back, and the probe when it is enabled.
type Site struct {
	Recorder *Recorder
	Server   *Server
	// Probe is nil unless SiteConfig.ProbeInterval is set.
	Probe *Probe
	done  chan struct{}
}

// SiteConfig is what a Site is made of.
type SiteConfig struct {
	Store     *store.Store
	Snapshots func() *snapshot.Snapshot
	Prober    *verify.Prober
	// ProbeInterval turns the probe on (ProbeIntervalFromEnv); 0: off.
	ProbeInterval time.Duration
	Log           *slog.Logger
	// SetAside counts the model's routes for a family that this replica has set aside; nil:
	// none are (routing.Health.SetAside).
	SetAside func(m *snapshot.Model, family string) int
}

// MinProbeInterval keeps the probe from hammering upstreams on a typo ("5s" for "5m").
const MinProbeInterval = 10 * time.Second

// ProbeIntervalFromEnv reads GATEWAY_STATUS_PROBE_INTERVAL (contract.md, "Status site and
// docs"): unset is 0 (no probe); a value that is not a duration of at least MinProbeInterval
// is an error, so that start-up fails instead of probing at the wrong pace.
func ProbeIntervalFromEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv("GATEWAY_STATUS_PROBE_INTERVAL")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < MinProbeInterval {
		return 0, fmt.Errorf("GATEWAY_STATUS_PROBE_INTERVAL=%q: want a duration of at least %s, e.g. 5m", v, MinProbeInterval)
	}
	return d, nil
}

// NewSite makes the recorder, the reader and, when enabled, the probe over one store.
func NewSite(c SiteConfig) *Site {
	rec := &Recorder{Store: c.Store, Log: c.Log.With("component", "status")}
	// The chat bot component reads the bot's last ReportBotHealth call.
	s := &Site{Recorder: rec, done: make(chan struct{}),
		Server: &Server{Reader: &Reader{Store: c.Store, Snapshots: c.Snapshots, BotHeartbeat: StoredBotHeartbeat(c.Store), SetAside: c.SetAside}}}
	if c.ProbeInterval > 0 {
		host, _ := os.Hostname()
		s.Probe = &Probe{Store: c.Store, Snapshots: c.Snapshots, Prober: c.Prober, Recorder: rec, Interval: c.ProbeInterval,
			Holder: fmt.Sprintf("%s/%d/%d", host, os.Getpid(), time.Now().UnixNano()), Log: c.Log.With("component", "status-probe")}
	}
	return s
}

// Register serves the StatusService on reg.
func (s *Site) Register(reg grpc.ServiceRegistrar) {
	statusv1.RegisterStatusServiceServer(reg, s.Server)
}

// Run flushes the counts (and probes, when enabled) until ctx ends; Done closes after the
// last flush.
func (s *Site) Run(ctx context.Context) {
	if s.Probe != nil {
		go s.Probe.Run(ctx)
	}
	go func() { defer close(s.done); s.Recorder.Run(ctx, 0) }()
}

// Done is closed once Run's last flush has ended.
func (s *Site) Done() <-chan struct{} { return s.done }

// StoredBotHeartbeat reads when the chat bot last reported its health; the zero time when it
// never did.
func StoredBotHeartbeat(st *store.Store) BotHeartbeat {
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
