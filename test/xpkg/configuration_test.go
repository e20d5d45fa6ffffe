package xpkg_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
)

// TestConfigurationPackage checks the Configuration `make xpkg` builds
// (_output/function-vllm-stack-configuration.xpkg, CONFIG_XPKG): its
// metadata, that it holds the repository's XRD and Composition, and that the
// examples validate against the XRD taken from the package, as
// `crossplane beta validate` does. FUNCTION_PACKAGE is the reference the
// Makefile built it with ($(XPKG_REGISTRY)/function-vllm-stack).
func TestConfigurationPackage(t *testing.T) {
	img := readImage(t, harness.File(t, "CONFIG_XPKG", "test-xpkg"))
	if t.Failed() {
		return
	}
	if len(img.layers) != 1 {
		t.Fatalf("%d layers, want only the package layer (a Configuration has no runtime)", len(img.layers))
	}
	l := img.find(t, "package.yaml")
	if len(l.files) != 1 {
		t.Errorf("the package layer holds %v, want only package.yaml", keys(l.files))
	}
	if diff := cmp.Diff(map[string]string{"io.crossplane.xpkg:" + l.digest: "base"}, img.config.Config.Labels); diff != "" {
		t.Errorf("config labels (-want +got):\n%s", diff)
	}
	docs := yamlDocs(t, l.files["package.yaml"])
	if len(docs) != 3 {
		t.Fatalf("package.yaml holds %d documents, want the Configuration metadata, the Composition and the XRD", len(docs))
	}
	byKind := map[string]map[string]any{}
	for _, d := range docs[1:] {
		k, _ := d["kind"].(string)
		if _, dup := byKind[k]; dup {
			t.Fatalf("two documents of kind %s", k)
		}
		byKind[k] = d
	}
	meta, comp, xrd := docs[0], byKind["Composition"], byKind["CompositeResourceDefinition"]
	if comp == nil || xrd == nil {
		t.Fatalf("package.yaml holds %v after the metadata, want a Composition and a CompositeResourceDefinition", keys(byKind))
	}

	var fnName string
	t.Run("Metadata", func(t *testing.T) { fnName = testConfigurationMetadata(t, meta) })
	t.Run("XRD", func(t *testing.T) {
		// `crossplane xpkg build` re-marshals the XRD from its Go type (the
		// comments go, an empty status comes); nothing else may differ.
		got := clone(t, xrd)
		delete(got, "status")
		if diff := cmp.Diff(readYAML(t, "xrd/definition.yaml")[0], got); diff != "" {
			t.Errorf("the package's XRD differs from xrd/definition.yaml (-file +package):\n%s", diff)
		}
		if xrd["apiVersion"] != "apiextensions.crossplane.io/v2" || xrd["spec"].(map[string]any)["scope"] != "Namespaced" {
			t.Errorf("the package's XRD is %v scope %v, want the namespaced apiextensions.crossplane.io/v2 one", xrd["apiVersion"], xrd["spec"].(map[string]any)["scope"])
		}
	})
	t.Run("Composition", func(t *testing.T) {
		if fnName == "" {
			t.Skip("no Function dependency")
		}
		// composition/composition.yaml, but its step runs the Function
		// Crossplane installs for the dependency, named after its repository.
		want := readYAML(t, "composition/composition.yaml")[0]
		steps := want["spec"].(map[string]any)["pipeline"].([]any)
		if len(steps) != 1 {
			t.Fatalf("composition/composition.yaml has %d steps, want 1", len(steps))
		}
		ref := steps[0].(map[string]any)["functionRef"].(map[string]any)
		if ref["name"] != "function-vllm-stack" {
			t.Fatalf("composition/composition.yaml: functionRef %v, want function-vllm-stack", ref["name"])
		}
		ref["name"] = fnName
		// and the container that loads runtime adapters runs that
		// Function's package at the version the Configuration depends on.
		pkg, version := functionPackage(t)
		in := steps[0].(map[string]any)["input"].(map[string]any)
		in["adapterSync"] = map[string]any{"image": pkg + ":" + version}
		if diff := cmp.Diff(want, comp); diff != "" {
			t.Errorf("the package's Composition differs from composition/composition.yaml with functionRef %s and adapterSync.image %s:%s (-want +package):\n%s", fnName, pkg, version, diff)
		}
	})
	t.Run("ValidateExamples", func(t *testing.T) { testValidateAgainstPackage(t, xrd, comp) })
}

// testConfigurationMetadata checks the Configuration metadata against
// package-configuration/crossplane.yaml and returns the name Crossplane gives
// the Function it installs for the dependency.
func testConfigurationMetadata(t *testing.T, meta map[string]any) string {
	if meta["apiVersion"] != "meta.pkg.crossplane.io/v1" || meta["kind"] != "Configuration" {
		t.Errorf("package.yaml starts with %v %v, want meta.pkg.crossplane.io/v1 Configuration", meta["apiVersion"], meta["kind"])
	}
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	pkg, version := functionPackage(t)
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(version) {
		t.Errorf("VERSION %q is not a semantic version vX.Y.Z[-pre]", version)
	}

	spec, _ := meta["spec"].(map[string]any)
	cp, _ := spec["crossplane"].(map[string]any)
	// The XRD is apiextensions.crossplane.io/v2 (namespaced XRs): Crossplane v2.
	if cp["version"] != ">=v2.0.0" {
		t.Errorf("spec.crossplane.version %v, want >=v2.0.0", cp["version"])
	}
	deps, _ := spec["dependsOn"].([]any)
	want := []any{map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "Function",
		"package":    pkg,
		"version":    version,
	}}
	if diff := cmp.Diff(want, deps); diff != "" {
		t.Errorf("spec.dependsOn (-want +got):\n%s", diff)
	}

	// The rest is package-configuration/crossplane.yaml as written.
	tmpl, err := os.ReadFile(filepath.Join(root, "package-configuration", "crossplane.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl = bytes.ReplaceAll(tmpl, []byte("@FUNCTION_PACKAGE@"), []byte(pkg))
	tmpl = bytes.ReplaceAll(tmpl, []byte("@VERSION@"), []byte(version))
	var file map[string]any
	if err := yaml.Unmarshal(tmpl, &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(file, meta); diff != "" {
		t.Errorf("Configuration metadata differs from package-configuration/crossplane.yaml (-file +package):\n%s", diff)
	}

	host, repo, ok := strings.Cut(pkg, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		t.Fatalf("dependsOn package %q does not start with a registry host", pkg)
	}
	return toDNSLabel(repo)
}

// defaultFunctionPackage is the Makefile's FUNCTION_PACKAGE by default.
const defaultFunctionPackage = "ghcr.io/vllm-project/function-vllm-stack"

// functionPackage is the Function package the Configuration was built to
// depend on (FUNCTION_PACKAGE, as make test-xpkg passes it) and VERSION.
func functionPackage(t *testing.T) (pkg, version string) {
	t.Helper()
	pkg = os.Getenv("FUNCTION_PACKAGE")
	if pkg == "" {
		pkg = defaultFunctionPackage
	}
	return pkg, readVersion(t)
}

// readVersion is the repository's VERSION, which versions both packages.
func readVersion(t *testing.T) string {
	t.Helper()
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	vb, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(vb))
}

// TestCompositionsAdapterSyncImage: the Compositions a user applies by hand
// name the released Function package at VERSION as the image of the
// container that loads runtime adapters, so that a new VERSION updates them.
func TestCompositionsAdapterSyncImage(t *testing.T) {
	want := defaultFunctionPackage + ":" + readVersion(t)
	for _, f := range []string{"composition/composition.yaml", "composition/legacy/composition.yaml"} {
		steps := readYAML(t, f)[0]["spec"].(map[string]any)["pipeline"].([]any)
		in, _ := steps[0].(map[string]any)["input"].(map[string]any)
		as, _ := in["adapterSync"].(map[string]any)
		if as["image"] != want {
			t.Errorf("%s: adapterSync.image %v, want %s (VERSION)", f, as["image"], want)
		}
	}
}

// toDNSLabel is xpkg.ToDNSLabel of crossplane-runtime (pkg/xpkg/name.go),
// which Crossplane's dependency resolver names a dependency by.
func toDNSLabel(s string) string {
	var cut strings.Builder
	for i := range len(s) {
		b := s[i]
		if ('a' <= b && b <= 'z') || ('0' <= b && b <= '9') {
			cut.WriteByte(b)
		}
		if (b == '.' || b == '/' || b == ':' || b == '-') && (i != 0 && i != 62 && i != len(s)-1) {
			cut.WriteByte('-')
		}
		if i == 62 {
			break
		}
	}
	return strings.Trim(cut.String(), "-")
}

func TestToDNSLabel(t *testing.T) {
	for in, want := range map[string]string{
		"vllm-project/function-vllm-stack":     "vllm-project-function-vllm-stack",
		"function-vllm-stack":                  "function-vllm-stack",
		"Platform/ml.team/function-vllm-stack": "latform-ml-team-function-vllm-stack",
	} {
		if got := toDNSLabel(in); got != want {
			t.Errorf("toDNSLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// testValidateAgainstPackage runs `crossplane beta validate` (offline, through
// hack/validate.sh) of every namespaced example and the package's Composition
// against the XRD and the Input CRD as the packages carry them.
func testValidateAgainstPackage(t *testing.T, xrd, comp map[string]any) {
	crossplane := harness.Tool(t, "CROSSPLANE", "test-xpkg")
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, objs ...map[string]any) string {
		var b bytes.Buffer
		for _, o := range objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	xrdFile := write("xrd.yaml", xrd)

	examples, err := filepath.Glob(filepath.Join(root, "example", "stacks", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples = append([]string{filepath.Join(root, "example", "xr.yaml")}, examples...)
	var objs []map[string]any
	stacks := 0
	for _, f := range examples {
		if filepath.Base(f) == "legacy-xr.yaml" { // an XProductionStack of the legacy XRD
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range yamlDocs(t, b) {
			if d["kind"] != "ProductionStack" {
				t.Fatalf("%s: a %v, want only ProductionStacks", f, d["kind"])
			}
			stacks++
			objs = append(objs, d)
		}
	}
	objs = append(objs, comp)
	resources := write("resources.yaml", objs...)

	env := []string{
		"CROSSPLANE=" + crossplane, "VALIDATE_ARGS=--error-on-missing-schemas",
		"VALIDATE_EXTENSIONS=" + xrdFile + "," + filepath.Join(root, "package", "input"),
	}
	r, err := harness.Run(context.Background(), root, env, "bash", "hack/validate.sh", "--rendered", resources)
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout) + string(r.Stderr)
	if r.ExitCode != 0 {
		t.Fatalf("crossplane beta validate: exit code %d:\n%s", r.ExitCode, out)
	}
	if strings.Contains(out, "downloading") {
		t.Fatalf("crossplane beta validate tried to download schemas:\n%s", out)
	}
	counts := map[string]int{
		"serving.vllm.ai/v1alpha1, Kind=ProductionStack, ":                                   stacks,
		"apiextensions.crossplane.io/v1, Kind=Composition, productionstacks.serving.vllm.ai": 1,
		"vllmstack.fn.crossplane.io/v1beta1, Kind=Input, ":                                   1,
	}
	for prefix, n := range counts {
		if got := strings.Count(out, "[✓] "+prefix); got != n {
			t.Errorf("%d lines \"[✓] %s...\", want %d:\n%s", got, prefix, n, out)
		}
	}
}

func clone(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
