package xp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A process is one binary the harness started, logging to a file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// procs is the set of processes of one harness object, stopped in reverse
// order of start.
type procs struct {
	mu   sync.Mutex
	list []*process
	logf func(string, ...any)
}

// start runs bin with args and env (nothing else of the test binary's
// environment) in dir, logging stdout and stderr to dir/<name>.log. The
// process gets its own process group and SIGKILL if the test binary dies.
func (ps *procs) start(dir, name, bin string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // a restarted process continues its log
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // its own process group, killed as a whole
		Pdeathsig: syscall.SIGKILL, // and killed if the test binary dies first
	}
	if err := spawn(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	if ps.logf != nil {
		ps.logf("started %s (pid %d)", name, cmd.Process.Pid)
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
	case <-p.done:
	case <-time.After(timeout):
		_ = p.stop(5 * time.Second)
		return p.tail(40), fmt.Errorf("%s did not end within %s", name, timeout)
	}
	ps.remove(p)
	if p.err != nil {
		return p.tail(40), fmt.Errorf("%s: %w", name, p.err)
	}
	return p.tail(40), nil
}

func (ps *procs) remove(p *process) {
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
		pids = append(pids, p.cmd.Process.Pid)
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
		if err := list[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (ps *procs) writeLogs(w io.Writer, lines int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		fmt.Fprintf(w, "----- last %d lines of %s's log -----\n%s\n", lines, p.name, p.tail(lines))
	}
}

func (ps *procs) find(name string) *process {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		if p.name == name {
			return p
		}
	}
	return nil
}

// exited reports whether the process has ended, and its log tail if so.
func (p *process) exited() (bool, string) {
	select {
	case <-p.done:
		return true, fmt.Sprintf("%s exited (%v); last lines of its log:\n%s", p.name, p.err, p.tail(40))
	default:
		return false, ""
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot signal %s (pid %d): %w", p.name, pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cannot kill %s (pid %d): %w", p.name, pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pid)
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Processes are started from one goroutine locked to its OS thread for the
// life of the test binary: Linux sends Pdeathsig when the thread that forked
// a child exits, not only when the process does (as e2e/cluster does).
var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnCh {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// CPUTime returns the CPU time (user plus system, all threads) a process has
// used so far, from /proc/<pid>/stat.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// fields count from the last ')'. utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: only %d fields", pid, len(f)+2)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat utime: %w", pid, err)
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat stime: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}
