package stack

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/vllm-project/function-vllm-stack/"

// TestLayers: imports run one way. The stack library and the status are
// plain Go over typed Kubernetes objects: neither needs the function SDK,
// gRPC or protobuf, so helm2stack, the tests and other programs can use them
// without a Crossplane function around them; the status reads what the
// stack composes, never the other way round; and only the function speaks
// to Crossplane. The packages of builders below stack/ know nothing of the
// ProductionStack.
func TestLayers(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		t.Skipf("no go command at %s to list the packages' imports: %v", goBin, err)
	}
	forbidden := []string{"github.com/crossplane/", "google.golang.org/grpc", "google.golang.org/protobuf", module + "fn", module + "helm2stack"}
	cases := map[string][]string{
		"stack":  append(forbidden, module+"status"),
		"status": forbidden,
		// A package of builders under stack/ takes plain values and knows
		// nothing of the ProductionStack or the library that reads it.
		"stack/inferencepool": append(forbidden, module+"status", module+"stack", module+"xrd/", module+"input/"),
		"stack/observability": append(forbidden, module+"status", module+"stack", module+"xrd/", module+"input/"),
	}
	for pkg, never := range cases {
		out, err := exec.Command(goBin, "list", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == module+pkg {
				continue
			}
			for _, n := range never {
				if dep == n || strings.HasPrefix(dep, strings.TrimSuffix(n, "/")+"/") || (strings.HasSuffix(n, "/") && strings.HasPrefix(dep, n)) {
					t.Errorf("package %s imports %s (through its imports): it must not depend on %s", pkg, dep, n)
				}
			}
		}
	}
}
