package stacktest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The releases the contract tests render every stack for: the vLLM releases
// the facts pin (0.22.0 is main of 2026-05-29; 0.23.0 to 0.27.1 are read at
// their branches or main of 2026-08-17, see vllm-flags.tsv), and every router
// release (HEAD is production-stack a6c01db).
var (
	VLLMReleases   = []string{"0.8.3", "0.8.4", "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.12.0", "0.16.0", "0.22.0", "0.23.0", "0.24.0", "0.26.0", "0.27.1"}
	RouterReleases = []string{"0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.1.4", "0.1.5", "0.1.6", "0.1.7", "0.1.8", "0.1.9", "0.1.10", "0.1.11", "0.1.12", "HEAD"}
)

// UpstreamDir holds the upstream facts as test data, from a package one
// level below the module's root (stack, fn).
const UpstreamDir = "../stack/testdata/upstream"

// Stacks are the stack manifests users start from, from a package one level
// below the module's root. The claim runs as is (a claim has the namespaced
// XR's shape); example/stacks/legacy-xr.yaml is the XR Crossplane makes of
// it.
func Stacks(t testing.TB) []string {
	t.Helper()
	stacks, err := filepath.Glob("../example/stacks/*.yaml")
	if err != nil || len(stacks) == 0 {
		t.Fatalf("no stacks in ../example/stacks: %v", err)
	}
	return append([]string{"../example/xr.yaml", "../example/claim.yaml", "../test/render/testdata/full.yaml", "../test/render/testdata/warnings.yaml"}, stacks...)
}

// LoadXR reads a stack manifest; a namespace other than "" replaces its own.
func LoadXR(t testing.TB, path, namespace string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	xr := map[string]any{}
	if err := yaml.Unmarshal(b, &xr); err != nil {
		t.Fatalf("cannot parse %s: %v", path, err)
	}
	if namespace != "" {
		xr["metadata"].(map[string]any)["namespace"] = namespace
	}
	return xr
}

// XRYAML parses an inline manifest.
func XRYAML(t testing.TB, manifest string) map[string]any {
	t.Helper()
	xr := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &xr); err != nil {
		t.Fatalf("cannot parse manifest: %v", err)
	}
	return xr
}

// LoadDocs reads the objects of a multi-document YAML file.
func LoadDocs(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []map[string]any
	d := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		doc := map[string]any{}
		if err := d.Decode(&doc); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("cannot parse %s: %v", path, err)
		}
		if len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// ReadTSV reads a table of test data: its rows after the header, but
// comments, each of cols columns.
func ReadTSV(name string, cols int) ([][]string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			continue
		}
		r := strings.Split(line, "\t")
		if len(r) != cols {
			return nil, fmt.Errorf("%s line %d: %d columns, want %d", name, i+2, len(r), cols)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// ArgValue is the value of option name in a command line, as "--name
// value" or "--name=value"; the last one when it occurs more than once.
func ArgValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i, a := range args {
		switch {
		case a == name && i+1 < len(args):
			value, found = args[i+1], true
		case strings.HasPrefix(a, name+"="):
			value, found = strings.TrimPrefix(a, name+"="), true
		}
	}
	return value, found
}

// InputFor is the Input a stack manifest needs to render: the adapter sync
// image (as example/composition.yaml names it) for a stack whose models
// have runtime adapters, else nil (the function's defaults).
func InputFor(xr map[string]any) map[string]any {
	spec, _ := xr["spec"].(map[string]any)
	models, _ := spec["models"].([]any)
	if m, ok := spec["model"]; ok {
		models = append(models, m)
	}
	for _, m := range models {
		if mm, _ := m.(map[string]any); mm["enableRuntimeAdapters"] == true {
			return map[string]any{
				"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input",
				"adapterSync": map[string]any{"image": AdapterSyncImage},
			}
		}
	}
	return nil
}

// AdapterSyncImage is the Input's adapterSync.image in example/composition.yaml.
const AdapterSyncImage = "xpkg.crossplane.io/vllm-project/function-vllm-stack:v0.1.0"
