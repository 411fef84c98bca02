// Package deps holds deps.sh, which installs what `make run` and `make test` need from the
// machine, and its test: the script run against a fake machine (a PATH of stub apt-get, sudo,
// id, node and npm that record their calls, and a fake root for the fixed install paths), so
// that nothing is installed or removed here.
package deps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// machine is one fake machine: what it has, and how its package manager and npm behave.
type machine struct {
	postgres, node, tspkgs, chromium bool
	staleLock                        bool   // package-lock.json newer than the installed packages
	uid                              string // what id -u says
	sudo, aptGet                     bool   // present on PATH
	apt                              string // "ok", "offline" (every call fails), "noop" (succeeds, installs nothing)
	npm                              string // "ok", "offline"
}

type fake struct {
	t                      *testing.T
	repo, root, bin, calls string
	env                    []string
	real                   map[string]string // the real tools by name
}

// The tools deps.sh itself uses besides the stubs (mkdir, chmod and cp: the stubs).
var tools = []string{"bash", "tail", "sed", "rm", "env", "mkdir", "chmod", "cp"}

func newFake(t *testing.T, m machine) *fake {
	t.Helper()
	dir := t.TempDir()
	f := &fake{t: t, repo: filepath.Join(dir, "repo"), root: filepath.Join(dir, "root"), bin: filepath.Join(dir, "bin"), calls: filepath.Join(dir, "calls"), real: map[string]string{}}
	toolDir := filepath.Join(dir, "tools")
	for _, d := range []string{f.bin, toolDir, filepath.Join(f.repo, "deploy", "deps"), filepath.Join(f.repo, "testdata", "tsclients"), f.root} {
		must(t, os.MkdirAll(d, 0o755))
	}
	for _, name := range tools {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s not found: %v", name, err)
		}
		f.real[name] = p
		must(t, os.Symlink(p, filepath.Join(toolDir, name)))
	}
	script, err := os.ReadFile("deps.sh")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(f.repo, "deploy", "deps", "deps.sh"), script, 0o755))
	lock := filepath.Join(f.repo, "testdata", "tsclients", "package-lock.json")
	must(t, os.WriteFile(lock, []byte("{}\n"), 0o644))

	// The stubs, in bash with absolute paths: PATH holds nothing else.
	stub := func(name, body string) {
		must(t, os.WriteFile(filepath.Join(f.bin, name), []byte("#!"+f.real["bash"]+"\necho \""+name+" $*\" >> \"$FAKE_CALLS\"\n"+body+"\n"), 0o755))
	}
	mkExe := func(path string) string { // shell that creates an executable stub at path
		return fmt.Sprintf("%s -p %q && echo '#!%s' > %q && %s +x %q", f.real["mkdir"], filepath.Dir(path), f.real["bash"], path, f.real["chmod"], path)
	}
	// What apt-get's nodejs and npm packages bring: stubs kept aside until it copies them in.
	store := filepath.Join(dir, "store")
	must(t, os.MkdirAll(store, 0o755))
	header := "#!" + f.real["bash"] + "\n"
	record := "echo \"npm $*\" >> \"$FAKE_CALLS\"\n"
	must(t, os.WriteFile(filepath.Join(store, "node"), []byte(header+`case $1 in -p) echo 20;; --version) echo v20.0.0;; esac`+"\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(store, "npm"), []byte(header+record+`[ "$FAKE_NPM" = offline ] && { echo "npm error network request to https://registry.npmjs.org failed, reason: getaddrinfo ENOTFOUND" >&2; exit 1; }
`+f.real["mkdir"]+` -p node_modules && echo '{}' > node_modules/.package-lock.json
`), 0o755))
	copyIn := func(name string) string {
		return fmt.Sprintf("%s %q %q", f.real["cp"], filepath.Join(store, name), filepath.Join(f.bin, name))
	}
	install := map[string]string{
		"postgresql": mkExe(filepath.Join(f.root, "usr/lib/postgresql/16/bin/initdb")),
		"chromium":   mkExe(filepath.Join(f.root, "usr/lib/chromium/chromium")),
		"nodejs":     copyIn("node"),
		"npm":        copyIn("npm"),
	}
	var cases strings.Builder
	for pkg, sh := range install {
		fmt.Fprintf(&cases, "  %s) %s ;;\n", pkg, sh)
	}
	if m.aptGet {
		stub("apt-get", `[ "$DEBIAN_FRONTEND" = noninteractive ] || { echo "apt-get without DEBIAN_FRONTEND=noninteractive" >&2; exit 3; }
[ "$FAKE_APT" = offline ] && { echo "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'" >&2; exit 100; }
[ "$1" = install ] || exit 0
[ "$FAKE_APT" = noop ] && exit 0
for p in "$@"; do case $p in
`+cases.String()+`esac; done`)
	}
	if m.sudo {
		stub("sudo", `exec "$@"`)
	}
	stub("id", `echo "$FAKE_UID"`)
	run := func(sh string) {
		if out, err := exec.Command(f.real["bash"], "-c", sh).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", sh, err, out)
		}
	}
	if m.postgres {
		run(install["postgresql"])
	}
	if m.chromium {
		run(install["chromium"])
	}
	if m.node {
		run(install["nodejs"] + " && " + install["npm"])
	}
	if m.tspkgs {
		nm := filepath.Join(f.repo, "testdata", "tsclients", "node_modules")
		must(t, os.MkdirAll(nm, 0o755))
		hidden := filepath.Join(nm, ".package-lock.json")
		must(t, os.WriteFile(hidden, []byte("{}\n"), 0o644))
		if m.staleLock { // a pull moved a pin after the last npm ci
			earlier := time.Now().Add(-time.Hour)
			must(t, os.Chtimes(hidden, earlier, earlier))
		}
	}
	f.env = []string{"PATH=" + f.bin + ":" + toolDir, "HOME=" + dir, "TMPDIR=" + dir, "GATEWAY_DEPS_ROOT=" + f.root,
		"FAKE_CALLS=" + f.calls, "FAKE_UID=" + m.uid, "FAKE_APT=" + m.apt, "FAKE_NPM=" + m.npm}
	return f
}

// run runs deps.sh from the fake repository's root and returns its exit code, its output and
// the stub calls it made.
func (f *fake) run(mode string, extraEnv ...string) (int, string, []string) {
	f.t.Helper()
	_ = os.Remove(f.calls)
	cmd := exec.Command(f.real["bash"], "deploy/deps/deps.sh", mode)
	cmd.Dir = f.repo
	cmd.Env = append(slices.Clone(f.env), extraEnv...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			f.t.Fatalf("deps.sh: %v", err)
		}
		code = ee.ExitCode()
	}
	var calls []string
	if b, err := os.ReadFile(f.calls); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasPrefix(l, "id ") { // asking who we are is no install
				calls = append(calls, l)
			}
		}
	}
	return code, string(out), calls
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const (
	update  = "apt-get update -q"
	pg      = "apt-get install -y -q postgresql"
	node    = "apt-get install -y -q nodejs npm"
	chrome  = "apt-get install -y -q chromium"
	npmCI   = "npm ci --no-audit --no-fund"
	sudoEnv = "sudo env DEBIAN_FRONTEND=noninteractive "
)

func TestDepsOnAFakeMachine(t *testing.T) {
	t.Parallel()
	all := machine{postgres: true, node: true, tspkgs: true, chromium: true, uid: "0", aptGet: true, apt: "ok", npm: "ok"}
	fresh := machine{uid: "0", aptGet: true, apt: "ok", npm: "ok"}
	with := func(m machine, edit func(*machine)) machine { edit(&m); return m }
	tests := []struct {
		name    string
		m       machine
		mode    string
		policy  string   // GATEWAY_DEPS
		env     []string // more environment
		code    int
		calls   []string
		out     []string // substrings of the output, in order
		noOut   bool     // silent: everything was there
		settled bool     // afterwards everything the mode needs is there: a second run calls nothing
	}{
		{name: "everything there: nothing called, nothing said", m: all, mode: "test", noOut: true, settled: true},
		{name: "fresh machine as root, test", m: fresh, mode: "test", settled: true,
			calls: []string{update, pg, node, chrome, npmCI},
			out: []string{"deps: updating the package lists (apt-get update) ... done in", "deps: installing PostgreSQL server (apt-get install -y postgresql) ... done in",
				"deps: installing Node.js and npm (apt-get install -y nodejs npm) ... done in", "deps: installing Chromium (apt-get install -y chromium) ... done in",
				"deps: installing the TypeScript SDK suite's npm packages (npm ci in testdata/tsclients) ... done in"}},
		{name: "fresh machine as root, run: PostgreSQL only", m: fresh, mode: "run", settled: true,
			calls: []string{update, pg}, out: []string{"installing PostgreSQL server (apt-get install -y postgresql) ... done in"}},
		{name: "run with DATABASE_URL: a database of one's own, no PostgreSQL server needed", m: fresh, mode: "run", env: []string{"DATABASE_URL=postgres://db.example/gw"},
			noOut: true},
		{name: "test with DATABASE_URL: the tests' throwaway clusters still need the server", m: fresh, mode: "test", env: []string{"DATABASE_URL=postgres://db.example/gw"},
			settled: true, calls: []string{update, pg, node, chrome, npmCI}},
		{name: "fresh machine through sudo", m: with(fresh, func(m *machine) { m.uid = "1000"; m.sudo = true }), mode: "test", settled: true,
			calls: []string{"sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q", update, sudoEnv + pg, pg, sudoEnv + node, node, sudoEnv + chrome, chrome, npmCI},
			out:   []string{"through sudo (it may ask for your password)", "(sudo apt-get install -y postgresql) ... done in", "(sudo apt-get install -y chromium) ... done in"}},
		{name: "only the npm packages missing: no apt-get, no sudo", m: with(all, func(m *machine) { m.tspkgs = false; m.uid = "1000" }), mode: "test", settled: true,
			calls: []string{npmCI}, out: []string{"npm packages (npm ci in testdata/tsclients) ... done in"}},
		{name: "a package-lock.json newer than the packages: npm ci again", m: with(all, func(m *machine) { m.staleLock = true }), mode: "test", settled: true,
			calls: []string{npmCI}},
		{name: "not root and no sudo: the command to run as root", m: with(fresh, func(m *machine) { m.uid = "1000" }), mode: "test", code: 1,
			out: []string{"deps: missing PostgreSQL server Node.js and npm Chromium; not root and no sudo: as root, run: apt-get update && apt-get install -y postgresql nodejs npm chromium",
				"then the TypeScript SDK suite's npm packages: (cd testdata/tsclients && npm ci)"}},
		{name: "no network for apt-get", m: with(fresh, func(m *machine) { m.uid = "1000"; m.sudo = true; m.apt = "offline" }), mode: "run", code: 1,
			calls: []string{"sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q", update},
			out:   []string{"deps: updating the package lists (sudo apt-get update) ... FAILED", "Temporary failure resolving", "no network?); run: sudo apt-get update && sudo apt-get install -y postgresql"}},
		{name: "no network for npm", m: with(all, func(m *machine) { m.tspkgs = false; m.npm = "offline" }), mode: "test", code: 1,
			calls: []string{npmCI}, out: []string{"... FAILED", "ENOTFOUND", "deps: npm ci failed (no network?); run: (cd testdata/tsclients && npm ci)"}},
		{name: "apt-get succeeds yet no Chromium (a snap stub)", m: with(all, func(m *machine) { m.chromium = false; m.apt = "noop" }), mode: "test", code: 1,
			calls: []string{update, chrome}, out: []string{"deps: Chromium not installed; run: apt-get install -y chromium"}},
		{name: "no apt-get", m: with(fresh, func(m *machine) { m.aptGet = false }), mode: "run", code: 1,
			out: []string{"there is no apt-get here: install PostgreSQL server with the system's package manager"}},
		{name: "check: says, installs nothing", m: fresh, mode: "test", policy: "check", code: 1,
			out: []string{"run: apt-get update && apt-get install -y postgresql nodejs npm chromium", "(cd testdata/tsclients && npm ci)"}},
		{name: "skip: says, installs nothing, goes on", m: fresh, mode: "test", policy: "skip",
			out: []string{"GATEWAY_DEPS=skip: missing PostgreSQL server Node.js and npm Chromium", "the TypeScript SDK suite will be SKIPPED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.m)
			env := tt.env
			if tt.policy != "" {
				env = append(env, "GATEWAY_DEPS="+tt.policy)
			}
			code, out, calls := f.run(tt.mode, env...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("calls\n  %s\nwant\n  %s\noutput:\n%s", strings.Join(calls, "\n  "), strings.Join(tt.calls, "\n  "), out)
			}
			if tt.noOut && out != "" {
				t.Errorf("output %q, want none", out)
			}
			rest := out
			for _, s := range tt.out {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("output lacks %q (in order):\n%s", s, out)
					break
				}
				rest = rest[i+len(s):]
			}
			// One line per step: every line is the script's, but a failed command's log.
			for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
				if l != "" && !strings.HasPrefix(l, "deps: ") && !strings.HasPrefix(l, "    ") {
					t.Errorf("line %q is neither a deps: line nor an indented log line", l)
				}
			}
			if tt.settled {
				if code, out, calls := f.run(tt.mode); code != 0 || out != "" || len(calls) != 0 {
					t.Errorf("second run: exit %d, output %q, calls %v; want a silent no-op", code, out, calls)
				}
			}
		})
	}
}

// The script's fast path when everything is there, bounded: make run and make test pay it on
// every call.
func TestDepsFastPath(t *testing.T) {
	f := newFake(t, machine{postgres: true, node: true, tspkgs: true, chromium: true, uid: "0", aptGet: true, apt: "ok", npm: "ok"})
	const n = 10
	start := time.Now()
	for range n {
		if code, out, calls := f.run("test"); code != 0 || out != "" || len(calls) != 0 {
			t.Fatalf("exit %d, output %q, calls %v", code, out, calls)
		}
	}
	per := time.Since(start) / n
	t.Logf("deps.sh test with everything there: %v per call", per)
	if per > 250*time.Millisecond { // about 5 ms unloaded; a loaded 2-core CI still far below
		t.Errorf("%v per call: the fast path must stay well under a second", per)
	}
}

// Usage errors say so rather than installing anything.
func TestDepsRefusesUnknownArguments(t *testing.T) {
	t.Parallel()
	f := newFake(t, machine{uid: "0", aptGet: true, apt: "ok", npm: "ok"})
	if code, _, calls := f.run("everything"); code != 2 || len(calls) != 0 {
		t.Errorf("mode everything: exit %d, calls %v; want 2, none", code, calls)
	}
	if code, _, calls := f.run("run", "GATEWAY_DEPS=yes"); code != 2 || len(calls) != 0 {
		t.Errorf("GATEWAY_DEPS=yes: exit %d, calls %v; want 2, none", code, calls)
	}
	// The same fake machine installs when asked properly: the refusals above were not for it.
	if code, out, calls := f.run("run"); code != 0 || !slices.Equal(calls, []string{update, pg}) {
		t.Errorf("run: exit %d, calls %v\n%s", code, calls, out)
	}
}
