package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"modelgateway/core/billing"
	"modelgateway/core/rpc"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/telemetry"
)

// setLogger makes the process logger from GATEWAY_LOG_LEVEL: JSON lines, text for the local
// run (make run).
func setLogger(cmd string) error {
	format := "json"
	if cmd == "dev" {
		format = "text"
	}
	log, err := telemetry.NewLogger(os.Stderr, format, os.Getenv("GATEWAY_LOG_LEVEL"))
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	return nil
}

// startTelemetry starts metrics, traces and the access log for a gateway, and hooks them
// into core: every outcome, every settlement, and the gauges read at each scrape.
func startTelemetry(ctx context.Context, cfg *Config, log *slog.Logger, st *store.Store, holder *snapshot.Holder, ledger *billing.Ledger, core *rpc.CoreServer) (*telemetry.Telemetry, error) {
	opts := telemetry.Options{
		MetricsAddr: cfg.MetricsAddr,
		Log:         log,
		Gauges: telemetry.Gauges{
			SnapshotLoadedAt: func() time.Time {
				if s := holder.Current(); s != nil {
					return s.LoadedAt
				}
				return time.Time{}
			},
			Pool:             func() *pgxpool.Stat { return st.Pool.Stat() },
			Ledger:           ledger.InFlight,
			Currency:         func() string { return holder.Current().Currency },
			RealtimeSessions: core.RealtimeSessions,
		},
	}
	if cfg.Telemetry != nil {
		cfg.Telemetry(&opts)
	}
	tel, err := telemetry.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	observers := rpc.Observers{tel}
	if core.Deps.Observer != nil {
		observers = append(observers, core.Deps.Observer)
	}
	core.Deps.Observer = observers
	ledger.OnSettle = tel.SettlementObserver()
	ledger.OnCharge = tel.ChargeWaitObserver()
	return tel, nil
}
