//go:build unix

package render_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
)

// TestRenderScript runs hack/render.sh (what `make render` runs) for the seed
// and for the bad manifest: the same output as the golden file and the same
// Fatal error, and the function it started is gone afterwards in both cases.
func TestRenderScript(t *testing.T) {
	crossplane := harness.Tool(t, "CROSSPLANE", "test-render")
	bin := harness.Tool(t, "FUNCTION_BIN", "test-render")
	for _, c := range []struct {
		name, xr string
		exit     int
		stdout   string // golden name
		stderr   string
	}{
		{name: "seed", xr: "example/xr.yaml", stdout: "seed"},
		{name: "bad", xr: fatals[0].xr, exit: 1, stderr: fatalPrefix + fatals[0].message + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// A wrapper that records the function's pid, to check it was
			// stopped, and (with setpriv) kills it should the script be
			// killed before its EXIT trap runs, e.g. on a test timeout.
			pidFile := filepath.Join(dir, "pid")
			wrapper := filepath.Join(dir, "function")
			script := "#!/bin/sh\necho $$ > '" + pidFile + "'\n" +
				"command -v setpriv >/dev/null 2>&1 && exec setpriv --pdeathsig KILL '" + bin + "' \"$@\"\n" +
				"exec '" + bin + "' \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			r, err := harness.Run(context.Background(), root, []string{
				"FUNCTION_BIN=" + wrapper,
				"CROSSPLANE=" + crossplane,
				"RENDER_ARGS=--include-function-results",
				"FUNCTION_ARGS=--metrics-address=",
				"RENDER_SHOW_LOG=0",
			}, "bash", "hack/render.sh", c.xr)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != c.exit {
				t.Errorf("hack/render.sh exit code = %d, want %d; stderr:\n%s", r.ExitCode, c.exit, r.Stderr)
			}
			if c.stdout != "" {
				compareGolden(t, c.stdout, r.Stdout)
			} else if len(r.Stdout) != 0 {
				t.Errorf("hack/render.sh printed output for a Fatal result:\n%s", r.Stdout)
			}
			if c.stderr != "" && !strings.HasPrefix(string(r.Stderr), c.stderr) {
				t.Errorf("stderr does not start with the Fatal error:\n got: %q\nwant: %q", r.Stderr, c.stderr)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the function was not started: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("function pid %d is still running after hack/render.sh exited (kill -0: %v)", pid, err)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
}
