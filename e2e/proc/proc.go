// Package proc starts and stops the binaries of the e2e harnesses (the
// control plane of e2e/cluster, Crossplane and the function of e2e/xp): each
// in its own process group, logging to a file, killed if the test binary
// dies, and found again by the tail of its log when it fails.
package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A Process is one binary a harness started, logging to a file.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// Start runs bin with args and env (nothing else of the test binary's
// environment) in dir, appending its stdout and stderr to logPath (a
// restarted process continues its log). The process gets its own process
// group and SIGKILL if the test binary dies.
func Start(name, bin, logPath, dir string, args, env []string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// Pid is its process id, which is also its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file its output goes to.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended, once Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has ended, and with its log tail if so.
func (p *Process) Exited() (bool, string) {
	select {
	case <-p.done:
		return true, fmt.Sprintf("%s exited (%v); last lines of its log:\n%s", p.name, p.err, p.Tail(40))
	default:
		return false, ""
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) error {
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
	// Still running: the group leader is alive, so -pid is still its group.
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

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
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
// a child exits, not only when the process does, and the Go runtime ends a
// thread when a goroutine locked to it returns.
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

// FreePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are held until all are chosen, so the ports differ.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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

// PortFree reports whether nothing listens on 127.0.0.1:port.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Gone reports whether process pid has ended: it does not exist, or it is a
// zombie waiting for its parent (or init) to reap it.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

// CheckGone verifies that none of pids still exists and that every port is
// free again: what a harness's Stop promises.
func CheckGone(pids, ports []int) error {
	var errs []error
	for _, pid := range pids {
		if !Gone(pid) {
			errs = append(errs, fmt.Errorf("process %d still exists after Stop", pid))
		}
	}
	for _, p := range ports {
		if !PortFree(p) {
			errs = append(errs, fmt.Errorf("port %d still in use after Stop", p))
		}
	}
	return errors.Join(errs...)
}
