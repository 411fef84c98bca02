package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
)

// TestNewcomerRun is a newcomer's first ten minutes: a fresh clone of the repository in a
// private directory of its own, `make run` there (the Makefile checks the machine, builds
// bin/gateway and runs `gateway dev`), with free ports. Every start-up step must print its line
// with a duration, and every address the final block prints must answer: the pages, /metrics,
// and each GET curl line with the key or token it shows. A second run (the clone's binary,
// `gateway dev` again) finds PostgreSQL running and prints the same demo key. As root the
// private directory (mode 0700) is one the postgres user cannot reach, so this also walks the
// cluster-moved-to-/var/tmp path README's "As root" tells. The clone holds what is committed.
func TestNewcomerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own and the gateway binary (-short)")
	}
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: a newcomer's clone and make run need it", tool)
		}
	}
	began := time.Now()
	defer func() { t.Logf("clone, make run and a second run in %v", time.Since(began).Round(time.Millisecond)) }()
	dir := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", ".", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot clone this checkout (%v): %s", err, out)
	}
	bin := filepath.Join(dir, "bin", "gateway")
	// Where the run will keep its cluster (dir/.data/pg, or under /var/tmp as root): stopped
	// and removed however the test ends.
	pgDir, _, err := devPGDir(filepath.Join(dir, ".data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDevCluster(t, pgDir) })

	first := runDev(t, dir, 5*time.Minute, "make", "run") // the build is most of it
	// The steps of a first start, in order; each line ends with its duration.
	wantSteps := []string{
		"PostgreSQL cluster set up (initdb ",
		"PostgreSQL started on 127.0.0.1:",
		"database migrations applied",
		"gateway listening on 127.0.0.1:",
		"demo catalogue, profile, key and FX rates loaded",
		"ready (all steps since the gateway process started)",
	}
	checkSteps(t, first.steps, wantSteps)
	if want := wantSteps[0] + pgDir + ")"; first.steps[0] != want {
		t.Errorf("first step %q, want %q", first.steps[0], want)
	}
	first.checkAddresses(t)

	// Re-run: no initdb, the server already running, the same key.
	second := runDev(t, dir, time.Minute, bin, "dev")
	checkSteps(t, second.steps, append([]string{"PostgreSQL already running on 127.0.0.1:"}, wantSteps[2:]...))
	if second.key != first.key {
		t.Errorf("second run printed demo key %q, first %q: re-runs must keep the key", second.key, first.key)
	}
	second.checkAddresses(t)
}

// devRun is what one `gateway dev` printed before it was stopped.
type devRun struct {
	steps      []string          // the step lines without "run: " and the duration
	pages      map[string]string // path (/docs, /status, /models, /metrics) → printed URL
	gets       []devGet          // the GET curl lines
	key, admin string
}

// devGet is a printed `curl -s URL -H 'Authorization: Bearer …'` line.
type devGet struct{ url, auth string }

var (
	stepRE  = regexp.MustCompile(`^run: (.+?)\s+(\d+\.\d\d)s$`)
	pageRE  = regexp.MustCompile(`^\s+(?:API reference|status page|models page|metrics)\s+(http://\S+?(/docs|/status|/models|/metrics))$`)
	keyRE   = regexp.MustCompile(`^\s+demo key:\s+(\S+)$`)
	adminRE = regexp.MustCompile(`^\s+admin token:\s+(\S+)$`)
	curlRE  = regexp.MustCompile(`^\s+curl -s '?(http://[^\s']+)'?(?: -H 'Authorization: Bearer ([^']+)')?$`)
)

// runDev runs argv (`make run`, or `gateway dev` itself) in dir (.data under it), reads its
// output up to the end of the final block within the bound, checks the addresses while it
// serves (through the returned value's methods, before stop), then stops it as Ctrl-C does:
// SIGINT to its process group. The gateway must exit cleanly; make, interrupted, may not.
func runDev(t *testing.T, dir string, within time.Duration, argv ...string) *devRun {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(gatewaytest.CleanEnv(), "GATEWAY_HTTP_ADDR=127.0.0.1:0", "GATEWAY_GRPC_ADDR=127.0.0.1:0", "GATEWAY_METRICS_ADDR=127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	viaMake := filepath.Base(argv[0]) == "make"
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Pdeathsig belongs to the thread that forks: keep it fixed while the child starts.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	r := &devRun{pages: map[string]string{}}
	banner := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "stop: Ctrl-C") {
				banner <- lines
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	var lines []string
	select {
	case lines = <-banner:
	case err := <-exited:
		t.Fatalf("gateway dev exited before its banner: %v\n%s", err, stderr.String())
	case <-time.After(within):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("no banner within %v\n%s", within, stderr.String())
	}
	for _, l := range lines {
		if m := stepRE.FindStringSubmatch(l); m != nil {
			r.steps = append(r.steps, m[1])
		}
		if m := pageRE.FindStringSubmatch(l); m != nil {
			r.pages[m[2]] = m[1]
		}
		if m := keyRE.FindStringSubmatch(l); m != nil {
			r.key = m[1]
		}
		if m := adminRE.FindStringSubmatch(l); m != nil {
			r.admin = m[1]
		}
		if m := curlRE.FindStringSubmatch(l); m != nil {
			r.gets = append(r.gets, devGet{url: m[1], auth: m[2]})
		}
	}
	r.checkAnswers(t)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil && !viaMake {
			t.Errorf("gateway dev after SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s did not stop within 20s of SIGINT\n%s", strings.Join(argv, " "), stderr.String())
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", strings.Join(lines, "\n"), stderr.String())
	}
	return r
}

// checkAddresses checks that the block printed what it must; checkAnswers, run while the
// gateway served, that each address answered.
func (r *devRun) checkAddresses(t *testing.T) {
	t.Helper()
	for _, p := range []string{"/docs", "/status", "/models", "/metrics"} {
		if r.pages[p] == "" {
			t.Errorf("the final block prints no %s address", p)
		}
	}
	if r.key == "" || r.admin == "" {
		t.Errorf("demo key %q, admin token %q: both must be printed", r.key, r.admin)
	}
	// /v1/models, /v1/balance, the admin lookup and /v1/catalog at least.
	if len(r.gets) < 4 {
		t.Errorf("%d GET curl lines printed, want at least 4: %+v", len(r.gets), r.gets)
	}
}

func (r *devRun) checkAnswers(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(url, bearer string) int {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for path, url := range r.pages {
		if code := get(url, ""); code != http.StatusOK {
			t.Errorf("GET %s (printed for %s): %d, want 200", url, path, code)
		}
	}
	sawKey := false
	for _, g := range r.gets {
		if code := get(g.url, g.auth); code != http.StatusOK {
			t.Errorf("printed curl line GET %s: %d, want 200", g.url, code)
		}
		if g.auth == r.key && strings.HasSuffix(g.url, "/v1/models") {
			sawKey = true
			// The key is what answers: the same address without it is refused.
			if code := get(g.url, ""); code != http.StatusUnauthorized {
				t.Errorf("GET %s without the demo key: %d, want 401", g.url, code)
			}
		}
	}
	if !sawKey {
		t.Errorf("no curl line for /v1/models with the printed demo key %q", r.key)
	}
}

// checkSteps compares the step lines, in order, by their beginnings.
func checkSteps(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step lines:\n  %s\nwant beginnings:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("step %d: %q, want it to begin %q", i+1, got[i], want[i])
		}
	}
}

// stopDevCluster ends the persistent server `gateway dev` leaves running on purpose (its
// pid is line 1 of postmaster.pid; SIGQUIT is an immediate shutdown) and removes its data,
// which as root lives outside the test's directory.
func stopDevCluster(t *testing.T, pgDir string) {
	if b, err := os.ReadFile(filepath.Join(pgDir, "postmaster.pid")); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if pid > 0 && syscall.Kill(pid, syscall.SIGQUIT) == nil {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil; {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	// The test's own directory goes with t.TempDir; a moved cluster's home is removed here.
	if home := filepath.Dir(pgDir); strings.HasPrefix(filepath.Base(home), "modelgateway-") {
		if err := os.RemoveAll(filepath.Dir(pgDir)); err != nil {
			t.Errorf("remove %s: %v", home, err)
		}
	}
}
