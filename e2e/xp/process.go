package xp

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// procs is the set of processes of one harness object, stopped in reverse
// order of start.
type procs struct {
	mu   sync.Mutex
	list []*proc.Process
	logf func(string, ...any)
}

// start runs bin with args and env (nothing else of the test binary's
// environment) in dir, logging to dir/<name>.log (proc.Start).
func (ps *procs) start(dir, name, bin string, args, env []string) (*proc.Process, error) {
	p, err := proc.Start(name, bin, filepath.Join(dir, name+".log"), dir, args, env)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	if ps.logf != nil {
		ps.logf("started %s (pid %d)", name, p.Pid())
	}
	return p, nil
}

// run starts a command and waits for it to end, returning its log on
// failure. It is still stopped by stopAll if the wait times out.
func (ps *procs) run(dir, name, bin string, args, env []string, timeout time.Duration) (string, error) {
	p, err := ps.start(dir, name, bin, args, env)
	if err != nil {
		return "", err
	}
	select {
	case <-p.Done():
	case <-time.After(timeout):
		_ = p.Stop(5 * time.Second)
		return p.Tail(40), fmt.Errorf("%s did not end within %s", name, timeout)
	}
	ps.remove(p)
	if p.Err() != nil {
		return p.Tail(40), fmt.Errorf("%s: %w", name, p.Err())
	}
	return p.Tail(40), nil
}

func (ps *procs) remove(p *proc.Process) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i, q := range ps.list {
		if q == p {
			ps.list = append(ps.list[:i], ps.list[i+1:]...)
			return
		}
	}
}

// pids returns the process ids of the processes still tracked.
func (ps *procs) pids() []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var pids []int
	for _, p := range ps.list {
		pids = append(pids, p.Pid())
	}
	return pids
}

// stopAll ends every process, last started first.
func (ps *procs) stopAll() error {
	ps.mu.Lock()
	list := ps.list
	ps.list = nil
	ps.mu.Unlock()
	var errs []error
	for i := len(list) - 1; i >= 0; i-- {
		if err := list[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (ps *procs) writeLogs(w io.Writer, lines int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		fmt.Fprintf(w, "----- last %d lines of %s's log -----\n%s\n", lines, p.Name(), p.Tail(lines))
	}
}

func (ps *procs) find(name string) *proc.Process {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		if p.Name() == name {
			return p
		}
	}
	return nil
}
