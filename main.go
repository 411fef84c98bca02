// Command gateway is the model gateway: one binary that serves the client protocols, the
// admin API and the catalogue, migrates its database, and administers itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"modelgateway/core/bench"
	"modelgateway/core/simulator"
	"modelgateway/core/version"
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
  bot               run the Telegram bot (its settings: gateway bot --help)
  bench             measure the gateway against a bare reverse proxy (make bench)
  version           print the version, commit and build date (also: gateway --version)

Every command answers -h/--help with its flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	if err := setLogger(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
	code := runCommand(ctx, os.Args[1], os.Args[2:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUnknownCommand is dispatch's answer to a command it does not have.
var errUnknownCommand = errors.New("unknown command")

// runCommand runs one command and says the exit status: 0, also for -h/--help; 1 for a failure; 2
// for an unknown command.
func runCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	switch err := dispatch(ctx, cmd, args, stdout); {
	case err == nil, errors.Is(err, flag.ErrHelp): // the flag set printed its usage
		return 0
	case errors.Is(err, errUnknownCommand):
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "gateway:", err)
		return 1
	}
}

func dispatch(ctx context.Context, cmd string, args []string, stdout io.Writer) error {
	switch cmd {
	case "serve":
		return cmdServe(ctx, args)
	case "migrate":
		return cmdMigrate(ctx, args)
	case "apply":
		return admincli.Apply(ctx, args)
	case "admin":
		return admincli.Admin(ctx, args, stdout)
	case "dev":
		return cmdDev(ctx, args)
	case "simulator":
		return simulator.Main(ctx, args)
	case "verify":
		return verifycli.Main(ctx, args)
	case "bot":
		return bot.Main(ctx, args)
	case "bench":
		return bench.Main(ctx, args)
	case "bare-proxy":
		return bench.BareProxy(ctx, args)
	case "version", "--version":
		_, err := fmt.Fprint(stdout, version.Get())
		return err
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	return errUnknownCommand
}
