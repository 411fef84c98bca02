// Package pgcluster starts a PostgreSQL server from the machine's own binaries: a throwaway
// one for tests, or a persistent one in a project directory for `make run`.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options chooses where and how the cluster runs.
type Options struct {
	Dir        string // data directory; "" = a new temporary directory removed by Stop
	Port       int    // 0 = a free port (persistent clusters remember theirs)
	Persistent bool   // keep the server running and the data between runs
	// Durable keeps PostgreSQL's own durability on (fsync, synchronous_commit,
	// full_page_writes): a commit returns once its write-ahead log is on disk. Throwaway
	// clusters run without it unless asked (tests, and the bench's default, for speed: their
	// data dies with them anyway); a persistent cluster always has it, since its data, the
	// ledger included, must survive a crash of the machine.
	Durable bool
	Log     io.Writer // server output for throwaway clusters; nil = discarded
	// Step, when set, hears each start-up step as it ends: "initdb" (a new data directory),
	// then "start" (the server accepts connections) or "running" (a persistent server was
	// already running on the directory). `make run` prints a line for each.
	Step func(step string)
}

// Cluster is a running server.
type Cluster struct {
	dir        string
	port       int
	persistent bool
	durable    bool
	temp       bool
	cmd        *exec.Cmd
	exited     chan struct{}
}

// Start initialises the data directory when needed and starts the server.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: opts.Dir, port: opts.Port, persistent: opts.Persistent, durable: opts.durable()}
	if c.dir == "" {
		// Short path: the unix socket lives in the data directory and has a 107-byte limit.
		c.dir, err = os.MkdirTemp("", "pg")
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		c.temp = true
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown data dir: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.dir, "PG_VERSION")); err != nil {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", c.dir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			c.cleanup()
			return nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
		opts.step("initdb")
	}
	if c.persistent {
		running, err := c.startPersistent(ctx, bin, cred)
		if err != nil {
			return nil, err
		}
		if err := c.waitReady(ctx); err != nil {
			c.Stop()
			return nil, err
		}
		if running {
			opts.step("running")
		} else {
			opts.step("start")
		}
		return c, nil
	}
	// A free port can be taken by another process before the server binds it: a server that
	// exits during start-up on a port of our choosing is started again on another.
	for attempt := 1; ; attempt++ {
		if err := c.startChild(ctx, bin, cred, opts.Log); err != nil {
			c.cleanup()
			return nil, err
		}
		err := c.waitReady(ctx)
		if err == nil {
			opts.step("start")
			return c, nil
		}
		if opts.Port != 0 || attempt == 3 || !errors.Is(err, errExited) {
			c.Stop()
			return nil, err
		}
		c.port = 0
	}
}

// durable: a persistent cluster is always durable, a throwaway one when asked.
func (o Options) durable() bool { return o.Durable || o.Persistent }

func (o Options) step(name string) {
	if o.Step != nil {
		o.Step(name)
	}
}

// errExited is a server that stopped before it accepted a connection.
var errExited = errors.New("postgres exited during start-up")

// URL is a connection string for a database on the cluster.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

// Port is the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

func (c *Cluster) serverArgs() []string {
	args := []string{"-p", strconv.Itoa(c.port), "-k", c.dir, "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"}
	if !c.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	return args
}

// startChild runs postgres as a child that dies with this process.
func (c *Cluster) startChild(ctx context.Context, bin string, cred *syscall.Credential, log io.Writer) error {
	if c.port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		c.port = p
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), append([]string{"-D", c.dir}, c.serverArgs()...)...)
	// Pdeathsig belongs to the thread that forks; keep it fixed while the child starts.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return nil
}

// startPersistent reuses a server already running on the directory (running) or starts one
// with pg_ctl so that it outlives this process.
func (c *Cluster) startPersistent(ctx context.Context, bin string, cred *syscall.Credential) (running bool, err error) {
	if port, ok := runningPort(c.dir); ok {
		c.port = port
		return true, nil
	}
	portFile := filepath.Join(c.dir, "gateway.port")
	if c.port == 0 {
		if b, err := os.ReadFile(portFile); err == nil {
			c.port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if c.port == 0 || !portFree(c.port) {
		p, err := freePort()
		if err != nil {
			return false, err
		}
		c.port = p
	}
	if err := os.WriteFile(portFile, []byte(strconv.Itoa(c.port)+"\n"), 0o644); err != nil {
		return false, fmt.Errorf("remember port: %w", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "pg_ctl"), "start", "-w", "-D", c.dir,
		"-l", filepath.Join(c.dir, "server.log"), "-o", strings.Join(c.serverArgs(), " "))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setsid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("pg_ctl start: %w: %s", err, out)
	}
	return false, nil
}

// runningPort reads postmaster.pid: line 1 is the pid, line 4 the port.
func runningPort(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err1 != nil || err2 != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return port, true
}

func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if c.exited != nil {
			select {
			case <-c.exited:
				return errExited
			default:
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres did not accept connections: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts a throwaway server down and removes its data; persistent servers keep running.
func (c *Cluster) Stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
	c.cleanup()
}

func (c *Cluster) cleanup() {
	if c.temp {
		_ = os.RemoveAll(c.dir)
	}
}

// binDir finds the newest PostgreSQL installation, falling back to PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries found (apt-get install postgresql)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential is the postgres user when running as root: initdb and postgres refuse root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
