package kubediff

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/fn"
	"github.com/vllm-project/function-vllm-stack/internal/fuzzseeds"
)

// The composed objects of every stack the function accepts must pass the
// API server's validation of their kind: k8s.io/kubernetes' for the kinds
// it builds in (builtin_test.go), the pinned upstream CRD's schema and CEL
// rules for the others (crds_test.go). test/fuzz checks the same stacks
// against internal/kubeapi and test/internal/kubecheck, which port some of
// those rules; this is the oracle they are held to.

// root is the function's repository.
const root = "../.."

// stackGlobs are the stacks test/fuzz starts from.
var stackGlobs = []string{"example/xr.yaml", "example/claim.yaml", "example/stacks/*.yaml", "test/render/testdata/*.yaml", "test/render/testdata/invalid/*.yaml"}

type corpus struct {
	stacks []stackFile
	input  []byte   // the Input of example/composition.yaml, as JSON
	paths  []string // every field of the XRD's spec, and the XR's metadata
}

type stackFile struct {
	name string
	json []byte
}

var loadCorpus = sync.OnceValues(func() (*corpus, error) {
	c := &corpus{}
	for _, g := range stackGlobs {
		files, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			d, err := firstDoc(f)
			if err != nil {
				return nil, err
			}
			j, _ := json.Marshal(d)
			c.stacks = append(c.stacks, stackFile{strings.TrimPrefix(f, root+"/"), j})
		}
	}
	comp, err := firstDoc(filepath.Join(root, "example", "composition.yaml"))
	if err != nil {
		return nil, err
	}
	steps, _ := comp["spec"].(map[string]any)["pipeline"].([]any)
	in, _ := steps[0].(map[string]any)["input"].(map[string]any)
	if in == nil {
		return nil, fmt.Errorf("example/composition.yaml has no Input")
	}
	c.input, _ = json.Marshal(in)
	// test/fuzz's stacks with a model's blocks in an item of models.
	for _, name := range []string{"example/stacks/disaggregated.yaml", "example/stacks/multi-node.yaml"} {
		j, err := fuzzseeds.AsModelsItem(c.stack(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		c.stacks = append(c.stacks, stackFile{name + " as models[0]", j})
	}
	if c.paths, err = xrdPaths(); err != nil {
		return nil, err
	}
	return c, nil
})

// stack is the JSON of the stack named name, if any.
func (c *corpus) stack(name string) []byte {
	for _, s := range c.stacks {
		if s.name == name {
			return s.json
		}
	}
	return nil
}

func mustCorpus(t testing.TB) *corpus {
	c, err := loadCorpus()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func firstDoc(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	doc := regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1)
	for _, d := range doc {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(m) > 0 {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s: no documents", file)
}

var function = fn.New(logging.NewNopLogger())

// internalError is how the Fatal message of a panic RunFunction recovered
// begins (fn/panic.go).
const internalError = "internal error: function-vllm-stack panicked"

// render runs the function on xr (with the Input when input is not nil),
// then again observing what it composed, as Crossplane's next reconcile
// does (the router's RoleBinding joins then). It returns the composed
// objects of both, by composition resource name and reconcile, or the
// Fatal message.
func render(t testing.TB, xr, input map[string]any) (map[string]map[string]any, string) {
	objs := map[string]map[string]any{}
	var observed map[string]*fnv1.Resource
	for pass := range 2 {
		req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, xr)}, Resources: observed}}
		if input != nil {
			req.Input = mustStruct(t, input)
		}
		rsp, err := function.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction: %v", err)
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				if strings.HasPrefix(r.GetMessage(), internalError) {
					// A bug, which RunFunction recovers from; test/fuzz
					// reports it with its stack trace.
					t.Fatalf("RunFunction panicked: %s", r.GetMessage())
				}
				return nil, r.GetMessage()
			}
		}
		observed = map[string]*fnv1.Resource{}
		for k, d := range rsp.GetDesired().GetResources() {
			objs[fmt.Sprintf("%s (reconcile %d)", k, pass+1)] = d.GetResource().AsMap()
			observed[k] = &fnv1.Resource{Resource: d.GetResource()}
		}
	}
	return objs, ""
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatalf("structpb: %v", err)
	}
	return s
}

// xrMeta is what Crossplane knows of an XR to compose it.
type xrMeta struct {
	apiVersion, kind, name, namespace, claimName, claimNamespace string
}

func metaOf(xr map[string]any) xrMeta {
	m := xrMeta{}
	m.apiVersion, _ = xr["apiVersion"].(string)
	m.kind, _ = xr["kind"].(string)
	md, _ := xr["metadata"].(map[string]any)
	m.name, _ = md["name"].(string)
	m.namespace, _ = md["namespace"].(string)
	labels, _ := md["labels"].(map[string]any)
	m.claimName, _ = labels["crossplane.io/claim-name"].(string)
	m.claimNamespace, _ = labels["crossplane.io/claim-namespace"].(string)
	return m
}

// plausible: the API server would store the XR's metadata and Crossplane
// send it (test/fuzz's rule: only then must the composed objects pass).
func (m xrMeta) plausible() bool {
	if m.apiVersion != "serving.vllm.ai/v1alpha1" || (m.kind != "ProductionStack" && m.kind != "XProductionStack") {
		return false
	}
	if len(validation.IsDNS1123Subdomain(m.name)) > 0 || m.namespace != "" && len(validation.IsDNS1123Label(m.namespace)) > 0 {
		return false
	}
	if m.claimName != "" || m.claimNamespace != "" || m.namespace == "" && m.kind == "XProductionStack" {
		return len(validation.IsDNS1123Subdomain(m.claimName)) == 0 && len(validation.IsValidLabelValue(m.claimName)) == 0 &&
			len(validation.IsDNS1123Label(m.claimNamespace)) == 0
	}
	return true
}

// applied is obj as Crossplane sends it to the API server: in the stack's
// namespace, with the composition resource name annotation, the XR's
// labels and the XR as its controller.
func applied(m xrMeta, key string, obj map[string]any) map[string]any {
	obj = deepCopyJSON(obj)
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann["crossplane.io/composition-resource-name"] = key
	md["annotations"] = ann
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	if len(validation.IsValidLabelValue(m.name)) == 0 {
		labels["crossplane.io/composite"] = m.name
	}
	if m.claimName != "" {
		labels["crossplane.io/claim-name"] = m.claimName
		labels["crossplane.io/claim-namespace"] = m.claimNamespace
	}
	md["labels"] = labels
	md["ownerReferences"] = []any{map[string]any{
		"apiVersion": m.apiVersion, "kind": m.kind, "name": m.name, "uid": "6c4ea2a5-2b2e-4c1b-9d7e-000000000001",
		"controller": true, "blockOwnerDeletion": true,
	}}
	if m.namespace != "" {
		md["namespace"] = m.namespace // Crossplane's v2 XRs own their namespace
	}
	return obj
}

// refusals renders xr and lists, for every composed object, what the API
// server refuses in it; refused is the function's Fatal message, if any.
func refusals(t testing.TB, xr, input map[string]any) (problems []string, refused string) {
	objs, fatal := render(t, xr, input)
	if fatal != "" {
		return nil, fatal
	}
	m := metaOf(xr)
	if !m.plausible() {
		return nil, ""
	}
	crds, err := loadCRDs()
	if err != nil {
		t.Fatalf("loading the pinned CRDs: %v", err)
	}
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		name := strings.SplitN(key, " ", 2)[0]
		obj := applied(m, name, objs[key])
		msgs := validateObject(crds, obj)
		// The next reconcile updates what the first created: LWS's
		// webhook validates updates with rules of their own.
		if prev, ok := objs[name+" (reconcile 1)"]; ok && obj["kind"] == "LeaderWorkerSet" && strings.HasSuffix(key, " (reconcile 2)") {
			msgs = append(msgs, lwsWebhook(crds, obj, applied(m, name, prev))...)
		}
		if len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("%s %s: %s", obj["kind"], key, strings.Join(msgs, "; ")))
		}
	}
	return problems, ""
}

// validateObject is what the API server refuses in obj, by its kind.
func validateObject(crds map[schema.GroupVersionKind]*crdKind, obj map[string]any) []string {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var msgs []string
	if k, ok := crds[schema.FromAPIVersionAndKind(av, kind)]; ok {
		for _, e := range k.Validate(obj) {
			msgs = append(msgs, e.Error())
		}
		if k.GVK == lwsGVK {
			msgs = append(msgs, lwsWebhook(crds, obj, nil)...)
		}
		return msgs
	}
	errs, err := validateBuiltin(obj)
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

// TestComposedObjects: every example and test stack, with and without the
// Input of example/composition.yaml.
func TestComposedObjects(t *testing.T) {
	c := mustCorpus(t)
	var input map[string]any
	if err := json.Unmarshal(c.input, &input); err != nil {
		t.Fatal(err)
	}
	composed := 0
	kinds := map[string]bool{}
	for _, s := range c.stacks {
		for _, in := range []map[string]any{nil, input} {
			var xr map[string]any
			if err := json.Unmarshal(s.json, &xr); err != nil {
				t.Fatal(err)
			}
			problems, fatal := refusals(t, xr, in)
			if fatal == "" {
				composed++
				objs, _ := render(t, xr, in)
				for _, o := range objs {
					kinds[o["kind"].(string)] = true
				}
			}
			for _, p := range problems {
				t.Errorf("%s (Input: %v): the API server refuses %s", s.name, in != nil, p)
			}
		}
	}
	if composed == 0 {
		t.Fatal("the function refused every stack")
	}
	// Every kind the function composes is in some stack, so each
	// validation above ran at least once.
	if got := slices.Sorted(maps.Keys(kinds)); !slices.Equal(got, composedKinds) {
		t.Errorf("the stacks compose the kinds %v, want %v", got, composedKinds)
	}
}

// composedKinds are the kinds the function composes.
var composedKinds = []string{"ConfigMap", "Deployment", "HTTPRoute", "HorizontalPodAutoscaler", "InferenceObjective", "InferencePool", "Ingress", "Job", "LeaderWorkerSet", "NetworkPolicy", "PersistentVolumeClaim",
	"PodDisruptionBudget", "PrometheusRule", "Role", "RoleBinding", "ScaledObject", "Service", "ServiceAccount", "ServiceMonitor"}

// TestOracleRefuses: the validation of each kind runs and refuses: every
// composed object of the stacks with a name the API server refuses, and the
// CRDs' CEL rules and unknown fields.
func TestOracleRefuses(t *testing.T) {
	c := mustCorpus(t)
	crds, err := loadCRDs()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]any{}
	for _, s := range c.stacks {
		var xr map[string]any
		if err := json.Unmarshal(s.json, &xr); err != nil {
			t.Fatal(err)
		}
		objs, _ := render(t, xr, nil)
		for key, o := range objs {
			if _, ok := seen[o["kind"].(string)]; !ok {
				seen[o["kind"].(string)] = applied(metaOf(xr), strings.SplitN(key, " ", 2)[0], o)
			}
		}
	}
	for kind, obj := range seen {
		bad := deepCopyJSON(obj)
		// A name no kind takes: Role, RoleBinding and PodDisruptionBudget
		// (1.37) take any path segment, such as Not_A_Name.
		bad["metadata"].(map[string]any)["name"] = "not/a-name"
		if msgs := validateObject(crds, bad); !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "metadata.name: Invalid value") }) {
			t.Errorf("%s named not/a-name: the oracle says %q, want metadata.name refused", kind, msgs)
		}
	}
	for _, tc := range []struct {
		kind, path, value, want string
	}{
		{"ScaledObject", "spec.minReplicaCount", "100", "spec: Invalid value: minReplicaCount must be less than or equal to maxReplicaCount"},
		{"HTTPRoute", "spec.parentRefs[1]", `{"name": "gw"}`, "sectionName must be unique when parentRefs includes 2 or more references to the same parent"},
		{"ServiceMonitor", "spec.endpoints[0].interval", `"1 minute"`, "spec.endpoints[0].interval: Invalid value: \"1 minute\": spec.endpoints[0].interval in body should match"},
		{"ServiceMonitor", "spec.unknownField", "1", "spec.unknownField: Invalid value: null: unknown field"},
	} {
		obj, ok := seen[tc.kind]
		if !ok {
			t.Errorf("no stack composes a %s", tc.kind)
			continue
		}
		bad := deepCopyJSON(obj)
		setPath(bad, tc.path, parse(tc.value))
		if tc.kind == "HTTPRoute" {
			setPath(bad, "spec.parentRefs[0]", map[string]any{"name": "gw"})
		}
		msgs := validateObject(crds, bad)
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, tc.want) }) {
			t.Errorf("%s with %s=%s: the oracle says %q, want %q", tc.kind, tc.path, tc.value, msgs, tc.want)
		}
	}
}

// FuzzComposedObjects takes FuzzRunFunction's inputs (test/fuzz: a stack,
// up to two values set at fields of the XRD or the XR's metadata, an
// Input), so corpus entries of one run in the other: whatever stack the
// function composes, the API server must take every object of it.
func FuzzComposedObjects(f *testing.F) {
	c := mustCorpus(f)
	for _, s := range c.stacks {
		f.Add(s.json, "", "", "", "", []byte(nil))
		f.Add(s.json, "", "", "", "", c.input)
	}
	seed := c.stacks[0].json
	for _, v := range fieldSeeds {
		f.Add(seed, v.path, v.value, v.path2, v.value2, []byte(nil))
	}
	blockSeeds, err := fuzzseeds.Seeds(c.paths, c.stack)
	if err != nil {
		f.Fatal(err)
	}
	bounds, err := fuzzseeds.Bounds(c.stack)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range append(blockSeeds, bounds...) {
		f.Add(v.Stack, v.Path, v.Value, v.Path2, v.Value2, []byte(nil))
	}
	for _, s := range c.stacks {
		if s.name == "example/stacks/multi-node.yaml" {
			for _, v := range multiNodeSeeds {
				f.Add(s.json, v.path, v.value, v.path2, v.value2, []byte(nil))
			}
		}
	}
	// Read before fuzzing: a worker panics on a call that takes more than
	// 10 s, and reading the CRDs takes seconds.
	if _, err := loadCRDs(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, xrJSON []byte, path, value, path2, value2 string, inputJSON []byte) {
		var xr map[string]any
		if err := json.Unmarshal(xrJSON, &xr); err != nil || xr == nil {
			return
		}
		if fuzzseeds.Pending(c.stack, xrJSON, path, value, path2, value2, inputJSON) {
			// As test/fuzz's FuzzRunFunction: skipped while the
			// function fails on it, a failure once it refuses it.
			setPath(xr, path, parse(value))
			rsp, err := function.RunFunction(context.Background(), &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, xr)}}})
			if err != nil {
				t.Fatalf("RunFunction: %v", err)
			}
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL && !strings.HasPrefix(r.GetMessage(), internalError) {
					t.Fatalf("the function now refuses %s %s (%s): mark it no longer pending in fuzzseeds.Hostile", path, value, r.GetMessage())
				}
			}
			t.Skipf("pending (issue 29): the function does not refuse %s %s yet, it panics or composes objects the API server refuses", path, value)
		}
		for _, pv := range [][2]string{{path, value}, {path2, value2}} {
			if p := c.field(pv[0]); p != "" {
				setPath(xr, p, parse(pv[1]))
			}
		}
		var input map[string]any
		if len(inputJSON) > 0 {
			if err := json.Unmarshal(inputJSON, &input); err != nil || input == nil {
				return
			}
		}
		if _, err := structpb.NewStruct(xr); err != nil {
			return
		}
		if input != nil {
			if _, err := structpb.NewStruct(input); err != nil {
				return
			}
		}
		problems, _ := refusals(t, xr, input)
		for _, p := range problems {
			t.Errorf("the function composed an object the API server refuses: %s", p)
		}
	})
}
