// Package harness runs the function binary and the crossplane CLI for the
// render and package tests in test/: it finds the repository, reads the tool
// paths from the environment, starts the function on a free 127.0.0.1 port
// (always stopped again, and killed with the test process on Linux) and runs
// `crossplane render` against it.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Module is the root module's path; Root checks it to find the repository.
const Module = "github.com/vllm-project/function-vllm-stack"

// StartTimeout bounds how long Start waits for the function to listen.
const StartTimeout = 30 * time.Second

// Root returns the repository root: the nearest parent directory of the
// working directory whose go.mod declares Module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module "+Module+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no parent directory holds the go.mod of %s", Module)
		}
		dir = parent
	}
}

// TB is the part of testing.TB that Tool needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Tool returns the executable named by environment variable env (a relative
// path is taken from the repository root). When it is unset or not executable
// the test is skipped, or fails when CI=true: in CI a missing tool is an
// error, not a reason to pass. makeTarget names the target that provides it.
func Tool(t TB, env, makeTarget string) string {
	t.Helper()
	return lookup(t, env, makeTarget, true)
}

// File is Tool for a file that need not be executable.
func File(t TB, env, makeTarget string) string {
	t.Helper()
	return lookup(t, env, makeTarget, false)
}

func lookup(t TB, env, makeTarget string, executable bool) string {
	t.Helper()
	p := os.Getenv(env)
	if p != "" && !filepath.IsAbs(p) {
		// go test runs in the package directory: relative paths are taken
		// from the repository root, as in the Makefile.
		if r, err := Root(); err == nil {
			p = filepath.Join(r, p)
		}
	}
	why := ""
	switch fi, err := os.Stat(p); {
	case p == "":
		why = env + " is not set"
	case err != nil:
		why = fmt.Sprintf("%s=%s: %v", env, p, err)
	case !fi.Mode().IsRegular():
		why = fmt.Sprintf("%s=%s is not a file", env, p)
	case executable && fi.Mode().Perm()&0o111 == 0:
		why = fmt.Sprintf("%s=%s is not executable", env, p)
	}
	if why == "" {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: required; run `make %s`)", why, makeTarget)
	}
	t.Skipf("%s: this test needs what `make %s` builds; `make test` builds it and runs every test (with CI=true a missing tool fails instead)", why, makeTarget)
	return ""
}

// Function is a function binary serving gRPC on 127.0.0.1 without TLS.
type Function struct {
	Addr string // host:port it listens on

	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	log  *syncBuffer

	stopOnce sync.Once
}

// Start runs binary with --insecure --address 127.0.0.1:<free port>
// --metrics-address= (no metrics listener, so parallel runs never clash on
// :8080) plus extra flags, and waits until it accepts connections. It retries
// on another port if the chosen one was taken meanwhile. The caller must Stop
// it; on Linux it is also killed when the test process dies.
func Start(binary string, extra ...string) (*Function, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		f := &Function{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			done: make(chan struct{}),
			log:  &syncBuffer{},
		}
		args := append([]string{"--insecure", "--address", f.Addr, "--metrics-address="}, extra...)
		f.cmd = exec.Command(binary, args...)
		f.cmd.Stdout = f.log
		f.cmd.Stderr = f.log
		f.cmd.SysProcAttr = sysProcAttr()
		if err := f.cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", binary, err)
		}
		go func() {
			_ = f.cmd.Wait()
			close(f.done)
		}()
		err = f.waitListening()
		if err == nil {
			return f, nil
		}
		f.Stop()
		lastErr = err
		if !strings.Contains(f.Log(), "address already in use") {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free port after 5 attempts: %w", lastErr)
}

func (f *Function) waitListening() error {
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return fmt.Errorf("function exited before listening on %s (%s); log:\n%s", f.Addr, f.cmd.ProcessState, f.Log())
		default:
		}
		c, err := net.DialTimeout("tcp", f.Addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("function did not listen on %s within %s; log:\n%s", f.Addr, StartTimeout, f.Log())
}

// Stop sends SIGTERM, waits up to 5s, then SIGKILLs. It returns once the
// process has exited and is safe to call more than once.
func (f *Function) Stop() {
	if f == nil || f.cmd == nil || f.cmd.Process == nil {
		return
	}
	f.stopOnce.Do(func() {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.done:
		case <-time.After(5 * time.Second):
			_ = f.cmd.Process.Kill()
			<-f.done
		}
	})
}

// Exited reports whether the process has exited.
func (f *Function) Exited() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Log returns what the function wrote to stdout and stderr so far.
func (f *Function) Log() string { return f.log.String() }

// FunctionsFile writes a copy of the Function manifests in src with every
// `render.crossplane.io/runtime-development-target: 127.0.0.1:9443` pointed at
// f, into dir, and returns its path.
func (f *Function) FunctionsFile(src, dir string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	const target = "render.crossplane.io/runtime-development-target: 127.0.0.1:9443"
	if !bytes.Contains(b, []byte(target)) {
		return "", fmt.Errorf("%s has no %q annotation", src, target)
	}
	b = bytes.ReplaceAll(b, []byte(target), []byte("render.crossplane.io/runtime-development-target: "+f.Addr))
	out := filepath.Join(dir, "functions.yaml")
	return out, os.WriteFile(out, b, 0o644)
}

// Result is what a CLI run printed and how it exited.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Run runs name with args in dir (with a timeout) and returns its output and
// exit code; err is set only if it could not run or was killed.
func Run(ctx context.Context, dir string, env []string, name string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited() && ctx.Err() == nil:
		r.ExitCode = exit.ExitCode()
		err = nil
	default:
		err = fmt.Errorf("%s %s: %w (stderr: %s)", name, strings.Join(args, " "), err, stderr.String())
	}
	return r, err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
