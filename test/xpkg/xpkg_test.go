// Package xpkg_test checks the Crossplane package `make xpkg` builds
// (_output/function-vllm-stack.xpkg): an image tarball (`docker save`
// layout: manifest.json, config and gzip layers named by digest) holding the
// package metadata and the function's runtime image, whose binary serves the
// function. Only the standard library reads it. configuration_test.go checks
// the Configuration package (_output/function-vllm-stack-configuration.xpkg)
// the same way, and validates the examples against the XRD it carries.
//
// `make test-xpkg` builds both packages and runs them:
//
//	XPKG=_output/function-vllm-stack.xpkg CONFIG_XPKG=_output/function-vllm-stack-configuration.xpkg \
//	FUNCTION_PACKAGE=ghcr.io/vllm-project/function-vllm-stack CROSSPLANE=.tools/bin/crossplane go test -count=1 ./test/xpkg/
//
// Without XPKG, CONFIG_XPKG and CROSSPLANE the tests skip, or fail when CI=true.
package xpkg_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
)

// image is the package tarball, read and checked for integrity.
type image struct {
	config configFile
	layers []layer // in manifest order
}

type layer struct {
	digest string            // sha256:<hex> of the gzip blob
	diffID string            // sha256:<hex> of the uncompressed tar
	files  map[string][]byte // path -> content
	heads  map[string]*tar.Header
}

type configFile struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		User         string              `json:"User"`
		WorkingDir   string              `json:"WorkingDir"`
		Env          []string            `json:"Env"`
		Labels       map[string]string   `json:"Labels"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// readImage reads the tarball at path and checks every blob against its
// digest: the config's name, the layers' names and the config's diff_ids.
func readImage(t *testing.T, path string) *image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blobs := map[string][]byte{}
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[h.Name] = b
	}
	var manifest []struct {
		Config string   `json:"Config"`
		Layers []string `json:"Layers"`
	}
	if err := json.Unmarshal(blobs["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 {
		t.Fatalf("manifest.json lists %d images, want 1", len(manifest))
	}
	m := manifest[0]
	cfg, ok := blobs[m.Config]
	if !ok {
		t.Fatalf("config %s is not in the tarball", m.Config)
	}
	if got := sha(cfg); got != m.Config {
		t.Errorf("config %s has digest %s", m.Config, got)
	}
	img := &image{}
	if err := json.Unmarshal(cfg, &img.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(img.config.RootFS.DiffIDs) != len(m.Layers) {
		t.Fatalf("%d diff_ids for %d layers", len(img.config.RootFS.DiffIDs), len(m.Layers))
	}
	for i, name := range m.Layers {
		blob, ok := blobs[name]
		if !ok {
			t.Fatalf("layer %s is not in the tarball", name)
		}
		l := layer{digest: sha(blob), files: map[string][]byte{}, heads: map[string]*tar.Header{}}
		if want := "sha256:" + strings.TrimSuffix(name, ".tar.gz"); l.digest != want {
			t.Errorf("layer %s has digest %s", name, l.digest)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob))
		if err != nil {
			t.Fatalf("layer %s: %v", name, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("layer %s: %v", name, err)
		}
		if l.diffID = sha(raw); l.diffID != img.config.RootFS.DiffIDs[i] {
			t.Errorf("layer %s: uncompressed digest %s, config diff_ids[%d] %s", name, l.diffID, i, img.config.RootFS.DiffIDs[i])
		}
		lr := tar.NewReader(bytes.NewReader(raw))
		for {
			h, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", name, err)
			}
			b, err := io.ReadAll(lr)
			if err != nil {
				t.Fatal(err)
			}
			p := strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")
			l.files[p], l.heads[p] = b, h
		}
		img.layers = append(img.layers, l)
	}
	return img
}

// find returns the layer holding path, and fails unless exactly one does.
func (img *image) find(t *testing.T, path string) layer {
	t.Helper()
	var found []layer
	for _, l := range img.layers {
		if _, ok := l.files[path]; ok {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d layers hold %s, want 1", len(found), path)
	}
	return found[0]
}

// TestPackage reads the package once (and checks every blob's digest), then
// checks its parts.
func TestPackage(t *testing.T) {
	img := readImage(t, harness.File(t, "XPKG", "test-xpkg"))
	if t.Failed() {
		return
	}
	t.Run("Metadata", func(t *testing.T) { testMetadata(t, img) })
	t.Run("RuntimeImage", func(t *testing.T) { testRuntimeImage(t, img) })
	t.Run("ImageRunsFunction", func(t *testing.T) { testImageRunsFunction(t, img) })
}

func yamlDocs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []map[string]any
	for {
		y, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := yaml.Unmarshal(y, &d); err != nil {
			t.Fatalf("%v\n%s", err, y)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
}

func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return yamlDocs(t, b)
}

// testMetadata: the package layer's package.yaml is the Function
// metadata of package/crossplane.yaml followed by the Input CRD of
// package/input, and the config labels that layer as the package ("base")
// layer, which is how Crossplane finds it.
func testMetadata(t *testing.T, img *image) {
	l := img.find(t, "package.yaml")
	if len(l.files) != 1 {
		t.Errorf("the package layer holds %v, want only package.yaml", keys(l.files))
	}
	want := map[string]string{"io.crossplane.xpkg:" + l.digest: "base"}
	if diff := cmp.Diff(want, img.config.Config.Labels); diff != "" {
		t.Errorf("config labels (-want +got):\n%s", diff)
	}

	docs := yamlDocs(t, l.files["package.yaml"])
	if len(docs) != 2 {
		t.Fatalf("package.yaml holds %d documents, want the Function metadata and the Input CRD", len(docs))
	}
	meta := docs[0]
	if meta["apiVersion"] != "meta.pkg.crossplane.io/v1beta1" || meta["kind"] != "Function" {
		t.Errorf("package.yaml starts with %v %v, want meta.pkg.crossplane.io/v1beta1 Function", meta["apiVersion"], meta["kind"])
	}
	if name := meta["metadata"].(map[string]any)["name"]; name != "function-vllm-stack" {
		t.Errorf("Function metadata name %v, want function-vllm-stack", name)
	}
	caps, _ := meta["spec"].(map[string]any)["capabilities"].([]any)
	if !slices.Contains(caps, any("composition")) {
		t.Errorf("spec.capabilities %v, want composition", caps)
	}
	if diff := cmp.Diff(readYAML(t, "package/crossplane.yaml")[0], meta); diff != "" {
		t.Errorf("Function metadata differs from package/crossplane.yaml (-file +package):\n%s", diff)
	}

	crd := docs[1]
	if crd["kind"] != "CustomResourceDefinition" || crd["metadata"].(map[string]any)["name"] != "inputs.vllmstack.fn.crossplane.io" {
		t.Errorf("second document is %v %v, want the CustomResourceDefinition inputs.vllmstack.fn.crossplane.io", crd["kind"], crd["metadata"])
	}
	// `crossplane xpkg build` re-marshals the CRD from its Go type, which adds
	// an empty status; nothing else may differ.
	emptyStatus := map[string]any{"acceptedNames": map[string]any{"kind": "", "plural": ""}, "conditions": nil, "storedVersions": nil}
	if diff := cmp.Diff(emptyStatus, crd["status"]); diff != "" {
		t.Errorf("Input CRD status in the package (-empty +got):\n%s", diff)
	}
	delete(crd, "status")
	if diff := cmp.Diff(readYAML(t, "package/input/vllmstack.fn.crossplane.io_inputs.yaml")[0], crd); diff != "" {
		t.Errorf("Input CRD differs from package/input/vllmstack.fn.crossplane.io_inputs.yaml (-file +package):\n%s", diff)
	}
}

// testRuntimeImage: the runtime config and the function binary.
func testRuntimeImage(t *testing.T, img *image) {
	c := img.config
	if c.OS != "linux" || c.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", c.OS, c.Architecture)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/function"}) || len(c.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/function] and no cmd", c.Config.Entrypoint, c.Config.Cmd)
	}
	if c.Config.User != "65532" {
		t.Errorf("user %q, want 65532 (non-root)", c.Config.User)
	}
	if diff := cmp.Diff(map[string]struct{}{"9443/tcp": {}}, c.Config.ExposedPorts); diff != "" {
		t.Errorf("exposed ports (-want +got):\n%s", diff)
	}
	if c.RootFS.Type != "layers" {
		t.Errorf("rootfs type %q", c.RootFS.Type)
	}

	l := img.find(t, "function")
	if len(l.files) != 1 {
		t.Errorf("the runtime layer holds %v, want only function", keys(l.files))
	}
	h := l.heads["function"]
	if h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o755 {
		t.Errorf("/function: type %c mode %o, want a regular file 0755 (user 65532 must be able to run it)", h.Typeflag, h.Mode)
	}
	f, err := elf.NewFile(bytes.NewReader(l.files["function"]))
	if err != nil {
		t.Fatalf("/function is not an ELF binary: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Errorf("/function: %v %v %v, want a 64-bit x86-64 executable", f.Class, f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/function is dynamically linked (%v): the image has no libc", p.Type)
		}
	}
}

// testImageRunsFunction extracts /function, starts it as Crossplane would run
// the image (but without TLS, on a free 127.0.0.1 port), renders the seed
// through it with the CLI, and compares with example/golden/seed.yaml.
func testImageRunsFunction(t *testing.T, img *image) {
	crossplane := harness.Tool(t, "CROSSPLANE", "test-xpkg")
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the image's binary is linux/amd64, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "function")
	if err := os.WriteFile(bin, img.find(t, "function").files["function"], 0o755); err != nil {
		t.Fatal(err)
	}
	fn, err := harness.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		fn.Stop()
		if !fn.Exited() {
			t.Error("the function did not stop")
		}
	}()
	root, err := harness.Root()
	if err != nil {
		t.Fatal(err)
	}
	functions, err := fn.FunctionsFile(filepath.Join(root, "example", "functions.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := harness.Run(context.Background(), root, nil, crossplane,
		"render", "example/xr.yaml", "example/composition.yaml", functions, "--include-function-results")
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || len(r.Stderr) != 0 {
		t.Fatalf("crossplane render: exit code %d, stderr:\n%s\nfunction log:\n%s", r.ExitCode, r.Stderr, fn.Log())
	}
	golden, err := os.ReadFile(filepath.Join(root, "example", "golden", "seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Stdout, golden) {
		t.Errorf("the packaged function renders the seed differently from example/golden/seed.yaml (-golden +got):\n%s",
			cmp.Diff(strings.Split(string(golden), "\n"), strings.Split(string(r.Stdout), "\n")))
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
