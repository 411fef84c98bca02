// Command gateway is the model gateway: one binary that serves the client protocols, the
// admin API and the catalogue, migrates its database, and administers itself.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"modelgateway/core/bench"
	"modelgateway/core/simulator"
	"modelgateway/front/admincli"
	"modelgateway/front/bot"
	"modelgateway/front/verifycli"
)

const usage = `usage: gateway <command> [flags]

commands:
  serve             migrate, then serve HTTP and gRPC until SIGTERM/SIGINT
  migrate           apply database migrations and exit
  apply -f FILE     apply a catalog document (YAML or JSON) through the admin API
  admin VERB ...    call an admin RPC and print JSON ("gateway admin help" lists verbs)
  dev               local run: throwaway PostgreSQL in .data/, demo catalogue, demo key, serve
  simulator         serve the upstream simulator alone (-addr, -first-byte, -chunk-delay, -words)
  verify            probe models for the optional parameters they accept and record them
  bot               run the Telegram bot (TELEGRAM_BOT_TOKEN, GATEWAY_ADMIN_ADDR; see README)
  bench             measure the gateway against a bare reverse proxy (make bench)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := setLogger(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = cmdServe(ctx, args)
	case "migrate":
		err = cmdMigrate(ctx, args)
	case "apply":
		err = admincli.Apply(ctx, args)
	case "admin":
		err = admincli.Admin(ctx, args, os.Stdout)
	case "dev":
		err = cmdDev(ctx, args)
	case "simulator":
		err = simulator.Main(ctx, args)
	case "verify":
		err = verifycli.Main(ctx, args)
	case "bot":
		err = bot.Main(ctx, args)
	case "bench":
		err = bench.Main(ctx, args)
	case "bare-proxy":
		err = bench.BareProxy(ctx, args)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}
