package render_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRenderStdout: `make render > stack.yaml` (or piped into kubectl
// apply -f -) on a fresh clone must put only the rendered objects on
// standard output (issue 38 §4). The repository's Makefile runs against a
// scratch ROOT in which every tool is out of date, with a stub `go` that
// writes an empty executable wherever it is told to build one, and stub
// hack/render.sh and hack/validate.sh that print one line of YAML: the
// function's build, each tool rule the target depends on and make's own
// echo of recipe lines all run, and standard output must be exactly the
// stub's line. Progress ("building crossplane CLI …") goes to standard
// error, where the test requires it, so the tool rules did run.
func TestMakeRenderStdout(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("make is not installed")
		}
		t.Skip("make is not installed")
	}
	for _, tc := range []struct{ target, progress string }{
		{"render", "building crossplane CLI"},
		{"validate", "building crossplane CLI"},
		{"render-v2", "building crossplane core"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			scratch := t.TempDir()
			write := func(rel, content string, mode os.FileMode) {
				t.Helper()
				p := filepath.Join(scratch, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), mode); err != nil {
					t.Fatal(err)
				}
			}
			write("VERSION", "v0.0.0\n", 0o644)
			for _, tool := range []string{"crossplane", "crossplane-cli", "crossplane-core"} {
				write("tools/"+tool+"/go.mod", "module stub\n\nrequire (\n\tgithub.com/crossplane/crossplane/v2 v2.0.0\n\tgithub.com/crossplane/cli/v2 v2.0.0\n)\n", 0o644)
				write("tools/"+tool+"/go.sum", "", 0o644)
			}
			const yaml = "kind: Rendered\n"
			write("hack/render.sh", "#!/usr/bin/env bash\nprintf 'kind: Rendered\\n'\n", 0o755)
			write("hack/validate.sh", "#!/usr/bin/env bash\nprintf 'kind: Rendered\\n'\n", 0o755)
			// The stub go builds an empty executable at -o, printing
			// nothing, as go build does on success.
			write("bin/go", "#!/usr/bin/env bash\nwhile (($#)); do if [[ $1 == -o ]]; then mkdir -p \"$(dirname \"$2\")\"; printf '#!/bin/sh\\n' >\"$2\"; chmod +x \"$2\"; fi; shift; done\n", 0o755)

			cmd := exec.Command(mk, "--no-print-directory", "-f", filepath.Join(root, "Makefile"),
				"ROOT="+scratch, "GO="+filepath.Join(scratch, "bin", "go"), tc.target)
			cmd.Dir = scratch
			// A make above this test (make test-render) must not
			// make this one a sub-make, which prints its directory.
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" && k != "MAKEFILES" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("make %s: %v\nstdout:\n%s\nstderr:\n%s", tc.target, err, stdout.String(), stderr.String())
			}
			if stdout.String() != yaml {
				t.Errorf("make %s on a fresh clone: standard output is not only the rendered YAML:\n%s\nstderr:\n%s", tc.target, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.progress) {
				t.Errorf("make %s: no %q on standard error, so no tool was built and the test proves nothing:\n%s", tc.target, tc.progress, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(scratch, "_output", "bin", "function")); err != nil {
				t.Errorf("make %s did not build the function: %v", tc.target, err)
			}
		})
	}
}
