package bench

// What the bench samples around a round: the CPU time of the processes it watches and of
// the CPUs they are pinned to.

import (
	"errors"
	"os"
	"time"
)

// cpuSample is cumulative CPU time: of the processes the bench watches, and of the two CPUs
// as a whole (to see whether anything else ran on them).
type cpuSample struct {
	cpu     time.Duration // the proxy process (user+system)
	loadCPU time.Duration // this process plus the simulators
	pgCPU   time.Duration // the throwaway PostgreSQL (0 with DATABASE_URL)
	pgWait  time.Duration // its live processes' time runnable but waiting for a CPU
	busy    [2]time.Duration
	io      procIO // the proxy's read and write system calls, its context switches
}

func (a cpuSample) minus(b cpuSample) cpuSample {
	return cpuSample{cpu: a.cpu - b.cpu, loadCPU: a.loadCPU - b.loadCPU, pgCPU: a.pgCPU - b.pgCPU, pgWait: a.pgWait - b.pgWait,
		busy: [2]time.Duration{a.busy[0] - b.busy[0], a.busy[1] - b.busy[1]},
		io:   a.io.minus(b.io)}
}

func (a cpuSample) plus(b cpuSample) cpuSample {
	return cpuSample{cpu: a.cpu + b.cpu, loadCPU: a.loadCPU + b.loadCPU, pgCPU: a.pgCPU + b.pgCPU, pgWait: a.pgWait + b.pgWait,
		busy: [2]time.Duration{a.busy[0] + b.busy[0], a.busy[1] + b.busy[1]},
		io:   a.io.plus(b.io)}
}

func (b *bench) sample(proc *child) (cpuSample, error) {
	var s cpuSample
	var errs [5]error
	s.cpu, errs[0] = cpuTime(proc.cmd.Process.Pid, b.hz)
	self, err := cpuTime(os.Getpid(), b.hz)
	errs[1] = err
	sim, err := cpuTime(b.sim.cmd.Process.Pid, b.hz)
	errs[2] = err
	s.loadCPU = self + sim
	if b.canned != nil {
		c, err := cpuTime(b.canned.cmd.Process.Pid, b.hz)
		errs[2] = errors.Join(errs[2], err)
		s.loadCPU += c
	}
	if b.pg != nil {
		s.pgCPU, s.pgWait, errs[3] = postgresCPU(b.hz)
	}
	s.busy, errs[4] = cpuBusy(b.hz, b.layout.busy)
	s.io = readProcIO(proc.cmd.Process.Pid)
	return s, errors.Join(errs[:]...)
}
