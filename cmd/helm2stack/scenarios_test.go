package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/helm2stack"
	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack"
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios/<name>.stack.yaml and .report.txt from the converter's output")

// The scenarios are values files of the chart, one per scenario its
// tutorials document; each converts (golden stack and report) and renders
// through the function (expect file).
const (
	scenarioName      = "s"
	scenarioNamespace = "llm"
)

func scenarios(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".values.yaml"))
	}
	return names
}

func valuesPath(name string) string {
	return filepath.Join("testdata", "scenarios", name+".values.yaml")
}

// TestScenariosConvert runs the command on every scenario: the manifest
// on stdout, the report and exit status, each against its golden file.
func TestScenariosConvert(t *testing.T) {
	for _, name := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"--name", scenarioName, "--namespace", scenarioNamespace, valuesPath(name)}, nil, &stdout, &stderr)
			report := fmt.Sprintf("%sexit status %d\n", stderr.String(), code)
			golden(t, filepath.Join("testdata", "scenarios", name+".stack.yaml"), stdout.Bytes())
			golden(t, filepath.Join("testdata", "scenarios", name+".report.txt"), []byte(report))
			if code != exitConverted {
				t.Errorf("exit status %d, want every key of a scenario converted:\n%s", code, stderr.String())
			}
			// The manifest decodes strictly into the API's types.
			var s struct {
				APIVersion, Kind string
				Metadata         map[string]string
				Spec             any
			}
			if err := yaml.UnmarshalStrict(stdout.Bytes(), &s); err != nil {
				t.Errorf("the manifest does not decode: %v", err)
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/helm2stack -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test ./cmd/helm2stack -update rewrites it):\n%s", path, diff)
	}
}

// TestScenariosRender renders every converted scenario through the
// function and compares the engine and router containers with the stack's
// side of the expect file, in order. After a change of the function,
// go test ./cmd/helm2stack -run TestScenariosRender -update-expect rewrites
// the stack's side (make helm-compare UPDATE_EXPECT=1 both sides).
func TestScenariosRender(t *testing.T) {
	for _, name := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			got := renderStack(t, name)
			if *updateExpect && os.Getenv("HELM_RENDERED") == "" {
				// The chart's side stays as the expect file has it.
				writeExpect(t, name, got, side(readExpect(t, name), "chart"))
			}
			want := side(readExpect(t, name), "stack")
			compareViews(t, "the function's rendering", want, got)
		})
	}
}

// renderStack converts a scenario and builds it with the stack library as
// the function does on a stack's second reconcile (every object composed).
func renderStack(t *testing.T, name string) view {
	t.Helper()
	values, err := os.ReadFile(valuesPath(name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := helm2stack.Convert(values, helm2stack.Options{Name: scenarioName, Namespace: scenarioNamespace})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := helm2stack.Manifest(res.Stack)
	if err != nil {
		t.Fatal(err)
	}
	xr := map[string]any{}
	if err := yaml.Unmarshal(manifest, &xr); err != nil {
		t.Fatal(err)
	}
	spec, raw, err := stack.DecodeSpec(xr["spec"])
	if err != nil {
		t.Fatal(err)
	}
	// The Input names the adapter sync image, as docs/helm.md tells a user
	// converting runtime adapters to.
	in := &v1beta1.Input{AdapterSync: &v1beta1.AdapterSyncInput{Image: "xpkg.crossplane.io/vllm-project/function-vllm-stack:v0.1.0"}}
	st := stack.New(stack.Identity{Name: scenarioName, Namespace: scenarioNamespace}, spec, in)
	if err := st.Validate(raw).Err(); err != nil {
		t.Fatalf("the function refuses the converted stack: %v", err)
	}
	objs, err := st.Compose(stack.Keys(func(string) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	var deployments []appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.Obj.(*appsv1.Deployment); ok {
			deployments = append(deployments, *d)
		}
	}
	return viewOf(t, deployments)
}
