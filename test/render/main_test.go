// Package render_test renders the example stacks end to end with the real
// crossplane CLI through the real function binary, and checks the output:
// golden files (example/golden/), Fatal results for bad manifests, offline
// `crossplane beta validate` against the XRD, and a strict typed decode plus
// validity checks of every composed Kubernetes object.
//
// `make test-render` builds both binaries and runs it:
//
//	FUNCTION_BIN=_output/bin/function CROSSPLANE=.tools/bin/crossplane go test -count=1 ./test/render/
//
// Without FUNCTION_BIN and CROSSPLANE the tests skip, or fail when CI=true.
// `-update` rewrites example/golden/ from the current render output.
package render_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
)

var update = flag.Bool("update", false, "rewrite example/golden/ from the current render output")

// root is the repository root; every path below is relative to it.
var root string

func TestMain(m *testing.M) {
	flag.Parse()
	r, err := harness.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root = r
	code := m.Run()
	fn.stop()
	os.Exit(code)
}

// fn is the function every render in this package goes through: one process,
// started on first use, stopped by TestMain (and killed with the test binary).
var fn server

type server struct {
	once      sync.Once
	f         *harness.Function
	dir       string
	functions string // example/functions.yaml pointed at f
	err       error
}

func (s *server) stop() {
	s.f.Stop()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// tools returns the crossplane CLI and the functions file of the running
// function, starting it if needed.
func tools(t *testing.T) (crossplane, functions string) {
	t.Helper()
	crossplane = harness.Tool(t, "CROSSPLANE", "test-render")
	bin := harness.Tool(t, "FUNCTION_BIN", "test-render")
	fn.once.Do(func() {
		fn.f, fn.err = harness.Start(bin)
		if fn.err != nil {
			return
		}
		if fn.dir, fn.err = os.MkdirTemp("", "render-test-"); fn.err != nil {
			return
		}
		fn.functions, fn.err = fn.f.FunctionsFile(filepath.Join(root, "example", "functions.yaml"), fn.dir)
	})
	if fn.err != nil {
		t.Fatalf("start the function: %v", fn.err)
	}
	if fn.f.Exited() {
		t.Fatalf("the function exited; log:\n%s", fn.f.Log())
	}
	return crossplane, fn.functions
}

// render runs `crossplane render XR COMPOSITION FUNCTIONS ARGS...` in the
// repository root.
func render(t *testing.T, xr, composition string, args ...string) harness.Result {
	t.Helper()
	crossplane, functions := tools(t)
	r, err := harness.Run(context.Background(), root, nil, crossplane,
		append([]string{"render", xr, composition, functions}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mustRender renders and fails unless the CLI exits 0 with nothing on stderr.
func mustRender(t *testing.T, xr, composition string, args ...string) []byte {
	t.Helper()
	r := render(t, xr, composition, args...)
	if r.ExitCode != 0 || len(r.Stderr) != 0 {
		t.Fatalf("crossplane render %s %s %s: exit code %d, stderr:\n%s\nfunction log:\n%s",
			xr, composition, strings.Join(args, " "), r.ExitCode, r.Stderr, fn.f.Log())
	}
	if len(r.Stdout) == 0 {
		t.Fatalf("crossplane render %s: no output", xr)
	}
	return r.Stdout
}

// compareGolden compares got with example/golden/<name>.yaml, or writes it
// with -update.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := goldenPath(name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make test-render UPDATE=1` to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("render output differs from %s (-golden +got); if the change is intended, run `make test-render UPDATE=1` and review the diff:\n%s",
			rel(path), cmp.Diff(lines(want), lines(got)))
	}
}

func goldenPath(name string) string { return filepath.Join(root, "example", "golden", name+".yaml") }

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}
