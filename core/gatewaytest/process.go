package gatewaytest

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"modelgateway/core/store/storetest"
)

// Options of one replica.
type Options struct {
	// Name names the replica in logs; "gateway" when empty.
	Name string
	// DatabaseURL is the replica's PostgreSQL; a fresh storetest database when empty.
	DatabaseURL string
	// Env adds to (or overrides) the replica's environment, NAME=value.
	Env []string
	// LogDir holds the replica's log (stdout and stderr); the test's temporary directory when empty.
	LogDir string
}

// Gateway is one `gateway serve` process.
type Gateway struct {
	Name     string
	Base     string // http://host:port of the client listener
	HTTPAddr string
	GRPCAddr string
	// MetricsAddr serves GET /metrics when Env sets GATEWAY_METRICS_ADDR (127.0.0.1:0 picks a
	// port); empty otherwise.
	MetricsAddr string
	DatabaseURL string
	Cmd         *exec.Cmd
	// Client sends Do's requests; one pool per replica, as a client of one host would have.
	Client *http.Client

	t      testing.TB
	pool   *pgxpool.Pool
	log    string
	exited chan struct{}
	err    error
}

// servingRE reads the start-up line in either log format (text: http=..., JSON: "http":"...").
var servingRE = regexp.MustCompile(`gateway serving.*\bhttp"?[=:]"?([^\s",]+)"?,?\s*"?grpc"?[=:]"?([^\s",]+)`)

// metricsRE reads the /metrics address from the same line; an empty one does not match.
var metricsRE = regexp.MustCompile(`\bmetrics"?[=:]"?([^\s",]+)`)

// Start runs a replica and waits until it serves; it is killed when the test ends.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	if o.Name == "" {
		o.Name = "gateway"
	}
	if o.DatabaseURL == "" {
		o.DatabaseURL = storetest.DatabaseURL(t)
	}
	if o.LogDir == "" {
		o.LogDir = t.TempDir()
	}
	g := &Gateway{Name: o.Name, DatabaseURL: o.DatabaseURL, t: t, log: filepath.Join(o.LogDir, o.Name+".log"), exited: make(chan struct{}),
		Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}}
	logFile, err := os.OpenFile(g.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary(t), "serve")
	cmd.Env = append(CleanEnv(), "DATABASE_URL="+o.DatabaseURL, "GATEWAY_HTTP_ADDR=127.0.0.1:0", "GATEWAY_GRPC_ADDR=127.0.0.1:0",
		"GATEWAY_ADMIN_TOKEN="+AdminToken, "GATEWAY_DRAIN_TIMEOUT=20s", "GATEWAY_METRICS_ADDR=", "UP_KEY="+UpstreamKey)
	cmd.Env = append(cmd.Env, o.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = logFile
	// The replica dies with the test process, whatever ends it. Pdeathsig follows the thread
	// that started the child, hence the lock.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	g.Cmd = cmd
	addr := make(chan [3]string, 1)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if m := servingRE.FindStringSubmatch(line); m != nil {
				a := [3]string{m[1], m[2]}
				if mm := metricsRE.FindStringSubmatch(line); mm != nil {
					a[2] = mm[1]
				}
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	go func() { g.err = cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		g.Kill()
		g.Client.CloseIdleConnections()
		if t.Failed() {
			g.DumpLog()
		}
	})
	select {
	case a := <-addr:
		g.HTTPAddr, g.GRPCAddr, g.MetricsAddr = a[0], a[1], a[2]
		g.Base = "http://" + a[0]
	case <-g.exited:
		g.DumpLog()
		t.Fatalf("%s exited at start-up: %v", o.Name, g.err)
	case <-time.After(60 * time.Second):
		g.DumpLog()
		t.Fatalf("%s did not start serving within 60s", o.Name)
	}
	return g
}

// CleanEnv is this process's environment without the gateway's own variables.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GATEWAY_") || strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "UP_KEY=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// DumpLog writes the replica's last 30 log lines to the test log.
func (g *Gateway) DumpLog() {
	data, _ := os.ReadFile(g.log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	g.t.Logf("--- last lines of %s ---\n%s", g.Name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
}

// Log is everything the replica has written so far.
func (g *Gateway) Log() string {
	data, _ := os.ReadFile(g.log)
	return string(data)
}

// Kill ends the replica at once (kill -9) and waits for it.
func (g *Gateway) Kill() {
	_ = g.Cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
}

// Term sends SIGTERM and waits for the exit within bound; it returns the exit error.
func (g *Gateway) Term(t testing.TB, bound time.Duration) error {
	t.Helper()
	_ = g.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return g.err
	case <-time.After(bound):
		t.Errorf("%s did not exit within %v of SIGTERM", g.Name, bound)
		g.Kill()
		return g.err
	}
}

// Exited is closed when the process has ended; Err is then its exit error.
func (g *Gateway) Exited() <-chan struct{} { return g.exited }

// Err is the exit error, once Exited is closed.
func (g *Gateway) Err() error { return g.err }

// Alive reports whether the process still runs.
func (g *Gateway) Alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}
