package fn

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden from the function's output")

// seedXR is the manifest of ../shared/seed-example.yaml, as users apply it,
// in namespace "llm".
func seedXR(t *testing.T) map[string]any {
	t.Helper()
	return stacktest.LoadXR(t, "../example/xr.yaml", "llm")
}

func toStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("cannot convert to Struct: %v", err)
	}
	return s
}

// req builds a RunFunctionRequest observing xr, with optional Input and
// observed composed resources (keyed by composition resource name).
func req(t *testing.T, xr map[string]any, input map[string]any, observed map[string]map[string]any) *fnv1.RunFunctionRequest {
	t.Helper()
	r := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "test"},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, xr)}},
	}
	if input != nil {
		r.Input = toStruct(t, input)
	}
	if len(observed) > 0 {
		r.Observed.Resources = map[string]*fnv1.Resource{}
		for k, o := range observed {
			r.Observed.Resources[k] = &fnv1.Resource{Resource: toStruct(t, o)}
		}
	}
	return r
}

func run(t *testing.T, r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), r)
	if err != nil {
		t.Fatalf("RunFunction returned an error, want a response: %v", err)
	}
	return rsp
}

// reconciledRequest is the request of a stack's second reconcile; the first
// request when the first run is Fatal.
func reconciledRequest(t *testing.T, xr, input map[string]any) *fnv1.RunFunctionRequest {
	t.Helper()
	first := run(t, req(t, xr, input, nil))
	for _, res := range first.GetResults() {
		if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return req(t, xr, input, nil)
		}
	}
	observed := map[string]map[string]any{}
	for k, r := range first.GetDesired().GetResources() {
		observed[k] = r.GetResource().AsMap()
	}
	return req(t, xr, input, observed)
}

// mustRun runs the function and fails the test on any Fatal result.
func mustRun(t *testing.T, r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	rsp := run(t, r)
	for _, res := range rsp.GetResults() {
		if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("unexpected Fatal result: %s", res.GetMessage())
		}
	}
	return rsp
}

// fatal returns the message of the response's Fatal result, failing the test
// when there is none, and checks that the function added no desired
// resources of its own.
func fatal(t *testing.T, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	if n := len(rsp.GetDesired().GetResources()); n > 0 {
		t.Errorf("a Fatal response must leave desired state untouched, got %d desired resources", n)
	}
	for _, res := range rsp.GetResults() {
		if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return res.GetMessage()
		}
	}
	t.Fatalf("no Fatal result in response")
	return ""
}

// desired decodes a desired composed resource into a typed object.
func desired[T runtime.Object](t *testing.T, rsp *fnv1.RunFunctionResponse, key string, into T) T {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		t.Fatalf("no desired resource %q; have %v", key, keys(rsp))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.GetResource().AsMap(), into); err != nil {
		t.Fatalf("cannot decode desired resource %q: %v", key, err)
	}
	return into
}

func keys(rsp *fnv1.RunFunctionResponse) []string {
	var ks []string
	for k := range rsp.GetDesired().GetResources() {
		ks = append(ks, k)
	}
	return ks
}

// goldenCompare compares a response with testdata/golden/<name>.yaml, a
// protojson rendering kept in YAML for review. Run `go test ./fn -update`
// to rewrite the files, then read the diff before committing.
func goldenCompare(t *testing.T, name string, got *fnv1.RunFunctionResponse) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".yaml")
	if *update {
		j, err := protojson.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read golden file (run go test ./fn -update to create it): %v", err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	want := &fnv1.RunFunctionResponse{}
	if err := protojson.Unmarshal(j, want); err != nil {
		t.Fatalf("cannot parse golden file %s: %v", path, err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("response differs from %s (-want +got):\n%s", path, diff)
	}
}

// setPath sets a value in an XR map at a dotted path, creating objects.
func setPath(m map[string]any, path string, v any) { stacktest.SetPath(m, path, v) }

// composedObjects are the objects the function composes for the stack of r,
// with what r observed (the router's RoleBinding waits for its Role).
func composedObjects(t *testing.T, r *fnv1.RunFunctionRequest) []stack.Object {
	t.Helper()
	oxr := observedComposite(r)
	id, err := identify(oxr.Resource)
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := stack.DecodeSpec(oxr.Resource.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	observed := observedComposed(r)
	objs, err := stack.New(id, spec, nil).Compose(observedState{req: r, composed: observed})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// observedExample is the request of the seed stack (applied without a
// namespace, so in "default") that observes example/observed/<state>: its
// composed objects, and its pods as the required resources.
func observedExample(t *testing.T, state string) (*fnv1.RunFunctionRequest, map[string]map[string]any) {
	t.Helper()
	dir := filepath.Join("..", "example", "observed", state)
	observed := map[string]map[string]any{}
	for _, o := range stacktest.LoadDocs(t, filepath.Join(dir, "composed.yaml")) {
		key, _, _ := unstructured.NestedString(o, "metadata", "annotations", "crossplane.io/composition-resource-name")
		if key == "" {
			t.Fatalf("%s: an observed resource has no crossplane.io/composition-resource-name annotation", dir)
		}
		observed[key] = o
	}
	var pods []corev1.Pod
	for _, o := range stacktest.LoadDocs(t, filepath.Join(dir, "pods.yaml")) {
		p := corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &p); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return withPods(t, req(t, stacktest.LoadXR(t, "../example/xr.yaml", "default"), compositionInput(), observed), pods...), observed
}

func minimalXR() map[string]any { return stacktest.MinimalXR() }

// with returns minimalXR with spec fields set at dotted paths below spec.
func with(kv ...any) map[string]any { return stacktest.With(kv...) }
