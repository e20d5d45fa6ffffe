package stack

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/vllm-project/function-vllm-stack/"

// layers are the packages of the stack library, lowest first, with the
// packages of stack/ each may import (docs/development.md draws them):
// names ← resolve ← build ← validate, transition ← stack. Imports run one
// way: a package never imports one above it or beside it, so a newcomer
// reads the library bottom up and a feature lands in the layer that owns
// it. The leafPackages take plain values and import nothing of stack/.
var layers = []struct {
	pkg string
	may []string
}{
	{"stack/names", nil},
	{"stack/resolve", []string{"stack/names"}},
	{"stack/build", []string{"stack/names", "stack/resolve"}},
	{"stack/validate", []string{"stack/names", "stack/resolve", "stack/build"}},
	{"stack/transition", []string{"stack/names", "stack/resolve", "stack/build"}},
	{"stack", []string{"stack/names", "stack/resolve", "stack/build", "stack/validate", "stack/transition"}},
}

// leafPackages are the packages of builders below stack/ that take plain values:
// any layer may import them, they import nothing of stack/.
var leafPackages = []string{"stack/inferencepool", "stack/observability", "stack/adaptersync"}

// layerViolations are the imports (package → its direct imports, by path
// relative to the module) that break the layering: a package of stack/
// importing one of stack/ it may not, a leaf importing anything of
// stack/, or a package outside stack/ importing a layer rather than the
// facade or a leaf.
func layerViolations(imports map[string][]string) []string {
	may := map[string][]string{}
	for _, l := range layers {
		may[l.pkg] = append(slices.Clone(l.may), leafPackages...)
	}
	for _, l := range leafPackages {
		may[l] = nil
	}
	inStack := func(p string) bool { return p == "stack" || strings.HasPrefix(p, "stack/") }
	var out []string
	for pkg, deps := range imports {
		for _, d := range deps {
			if !inStack(d) || d == pkg {
				continue
			}
			allowed, layered := may[pkg]
			switch {
			case layered && !slices.Contains(allowed, d):
				out = append(out, fmt.Sprintf("%s imports %s: it may import %s", pkg, d, mayImport(allowed)))
			case !layered && inStack(pkg):
				out = append(out, fmt.Sprintf("%s imports %s: a package of stack/ must be a layer or a leaf (layers_test.go)", pkg, d))
			case !inStack(pkg) && d != "stack" && !slices.Contains(leafPackages, d):
				out = append(out, fmt.Sprintf("%s imports %s: outside stack/ use the facade (package stack) or a leaf", pkg, d))
			}
		}
	}
	sort.Strings(out)
	return out
}

func mayImport(ps []string) string {
	if len(ps) == 0 {
		return "nothing of stack/"
	}
	return "only " + strings.Join(ps, ", ") + " of stack/"
}

// moduleImports lists every package of the module with its direct imports
// of the module's packages, by path relative to the module.
func moduleImports(t *testing.T, goBin string) map[string][]string {
	t.Helper()
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,TestImports", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath           string
			Imports, TestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkg, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		// A package's in-package tests are part of it: they may reach
		// no higher than its code.
		for _, d := range slices.Concat(p.Imports, p.TestImports) {
			if rel, ok := strings.CutPrefix(d, module); ok {
				imports[pkg] = append(imports[pkg], rel)
			}
		}
	}
	return imports
}

// TestLayers: the packages of stack/ import one way (layers), and the
// library and the status are plain Go over typed Kubernetes objects:
// neither needs the function SDK, gRPC or protobuf, so helm2stack, the
// tests and other programs can use them without a Crossplane function
// around them; the status reads what the stack composes, never the other
// way round; and only the function speaks to Crossplane.
func TestLayers(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		t.Skipf("no go command at %s to list the packages' imports: %v", goBin, err)
	}
	imports := moduleImports(t, goBin)
	for _, l := range layers {
		if _, ok := imports[l.pkg]; !ok && l.pkg != "stack/names" {
			t.Errorf("go list found no package %s, or it imports nothing of the module: the layers in layers_test.go are out of date", l.pkg)
		}
	}
	if v := layerViolations(imports); len(v) > 0 {
		t.Errorf("imports against the layers:\n%s", strings.Join(v, "\n"))
	}

	forbidden := []string{"github.com/crossplane/", "google.golang.org/grpc", "google.golang.org/protobuf", module + "fn", module + "helm2stack"}
	cases := map[string][]string{
		"stack":  append(forbidden, module+"status"),
		"status": forbidden,
		// A package of builders under stack/ takes plain values and knows
		// nothing of the ProductionStack or the library that reads it.
		"stack/inferencepool": append(forbidden, module+"status", module+"stack", module+"xrd/", module+"input/"),
		"stack/observability": append(forbidden, module+"status", module+"stack", module+"xrd/", module+"input/"),
		// The codec between objects and the protocol's forms speaks
		// protobuf, and nothing of the SDK or of this module.
		"internal/wire": {"github.com/crossplane/", "google.golang.org/grpc", module},
	}
	for _, l := range layers {
		cases[l.pkg] = append(forbidden, module+"status")
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

// TestLayerViolations: the check of TestLayers fails on an import that goes
// up or sideways, on a leaf that imports the library, and on a caller that
// reaches past the facade, and passes the module's own graph with one of
// each planted.
func TestLayerViolations(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		t.Skipf("no go command at %s to list the packages' imports: %v", goBin, err)
	}
	imports := moduleImports(t, goBin)
	imports["stack/names"] = append(imports["stack/names"], "stack/build")
	imports["stack/validate"] = append(imports["stack/validate"], "stack/transition")
	imports["stack/build"] = append(imports["stack/build"], "stack")
	imports["stack/inferencepool"] = append(imports["stack/inferencepool"], "stack/names")
	imports["fn"] = append(imports["fn"], "stack/resolve")
	want := []string{
		"fn imports stack/resolve: outside stack/ use the facade (package stack) or a leaf",
		"stack/build imports stack: it may import only stack/names, stack/resolve, stack/inferencepool, stack/observability, stack/adaptersync of stack/",
		"stack/inferencepool imports stack/names: it may import nothing of stack/",
		"stack/names imports stack/build: it may import only stack/inferencepool, stack/observability, stack/adaptersync of stack/",
		"stack/validate imports stack/transition: it may import only stack/names, stack/resolve, stack/build, stack/inferencepool, stack/observability, stack/adaptersync of stack/",
	}
	if diff := cmp.Diff(want, layerViolations(imports)); diff != "" {
		t.Errorf("layerViolations with planted imports (-want +got):\n%s", diff)
	}
}
