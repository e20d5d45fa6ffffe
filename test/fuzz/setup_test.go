package fuzz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/fn"
	"github.com/vllm-project/function-vllm-stack/internal/fuzzseeds"
	"github.com/vllm-project/function-vllm-stack/test/internal/harness"
	"github.com/vllm-project/function-vllm-stack/test/internal/kubecheck"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// corpus is what the fuzz targets start from.
type corpus struct {
	root      string
	stacks    []stackFile       // every example and test stack
	input     map[string]any    // the Input of example/composition.yaml
	inputJSON []byte            // and its JSON
	paths     []string          // every field of the XRD's spec, and the XR's metadata
	types     map[string]string // the schema type of each field of the spec
	seeds     []string          // the fields a seed sets a value at
	relPaths  []string          // the fields of the spec by their path below spec, with a dot
	observed  []observedSample  // example/observed/*
	crds      []map[string]any  // example/required/crds.yaml
}

type stackFile struct {
	name string
	json []byte
}

type observedSample struct {
	name     string
	composed map[string]map[string]any // by composition resource name
	pods     []map[string]any
}

var load = sync.OnceValues(func() (*corpus, error) {
	root, err := harness.Root()
	if err != nil {
		return nil, err
	}
	c := &corpus{root: root}
	var files []string
	for _, g := range []string{"example/xr.yaml", "example/claim.yaml", "example/stacks/*.yaml", "test/render/testdata/*.yaml", "test/render/testdata/invalid/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	for _, f := range files {
		docs, err := yamlDocs(f)
		if err != nil {
			return nil, err
		}
		j, err := json.Marshal(docs[0])
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		c.stacks = append(c.stacks, stackFile{name: rel, json: j})
	}
	comp, err := yamlDocs(filepath.Join(root, "example", "composition.yaml"))
	if err != nil {
		return nil, err
	}
	steps, _ := comp[0]["spec"].(map[string]any)["pipeline"].([]any)
	c.input, _ = steps[0].(map[string]any)["input"].(map[string]any)
	if c.input == nil {
		return nil, fmt.Errorf("example/composition.yaml has no Input")
	}
	if c.inputJSON, err = json.Marshal(c.input); err != nil {
		return nil, err
	}
	var def map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &def); err != nil {
		return nil, err
	}
	vs := def["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	c.paths = []string{"metadata.name", "metadata.namespace", "metadata.labels[crossplane.io/claim-name]", "metadata.labels[crossplane.io/claim-namespace]", "kind", "spec"}
	c.types = map[string]string{}
	schemaPaths(spec, "spec", &c.paths, c.types)
	slices.Sort(c.paths)
	for _, p := range c.paths {
		if rel, ok := strings.CutPrefix(p, "spec."); ok {
			rel = strings.NewReplacer("[0]", "", "[key]", "").Replace(rel)
			if strings.Contains(rel, ".") && !slices.Contains(c.relPaths, rel) {
				c.relPaths = append(c.relPaths, rel)
			}
		}
	}
	for _, p := range c.paths {
		// A seed per field of the API's own types, at the top level: the
		// fuzzer reaches the rest by mutating paths and values.
		if !strings.HasPrefix(p, "spec.models[0].") && !strings.Contains(p, ".affinity.") && !strings.Contains(p, "SecurityContext.") &&
			!strings.Contains(p, ".initContainers[0].") && !strings.Contains(p, ".tolerations[0].") && !strings.Contains(p, ".env[0].valueFrom") &&
			!strings.Contains(p, ".resources.") && !strings.Contains(p, "securityContext") && strings.Count(p, ".") <= 3 {
			c.seeds = append(c.seeds, p)
		}
	}
	// The examples of disaggregation and multiNode with their model as an
	// item of models, the blocks in it: their fields there take effect too.
	for _, name := range []string{"example/stacks/disaggregated.yaml", "example/stacks/multi-node.yaml"} {
		j, err := fuzzseeds.AsModelsItem(c.stack(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		c.stacks = append(c.stacks, stackFile{name: name + " as models[0]", json: j})
	}
	for _, state := range []string{"downloading", "gpu-pending", "ready"} {
		o := observedSample{name: state, composed: map[string]map[string]any{}}
		docs, err := yamlDocs(filepath.Join(root, "example", "observed", state, "composed.yaml"))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			ann, _ := d["metadata"].(map[string]any)["annotations"].(map[string]any)
			key, _ := ann["crossplane.io/composition-resource-name"].(string)
			o.composed[key] = d
		}
		if o.pods, err = yamlDocs(filepath.Join(root, "example", "observed", state, "pods.yaml")); err != nil {
			return nil, err
		}
		c.observed = append(c.observed, o)
	}
	if c.crds, err = yamlDocs(filepath.Join(root, "example", "required", "crds.yaml")); err != nil {
		return nil, err
	}
	return c, nil
})

// stack is the JSON of the stack named name; it panics when there is none.
func (c *corpus) stack(name string) []byte {
	if j := c.stackOrNil(name); j != nil {
		return j
	}
	panic("no stack " + name + " in the corpus")
}

// stackOrNil is the JSON of the stack named name, if any.
func (c *corpus) stackOrNil(name string) []byte {
	for _, s := range c.stacks {
		if s.name == name {
			return s.json
		}
	}
	return nil
}

func mustLoad(f testing.TB) *corpus {
	c, err := load()
	if err != nil {
		f.Fatal(err)
	}
	// The pinned CRDs kubecheck holds custom kinds to, read now: a fuzz
	// worker panics ("deadlocked!") on a call of the fuzz function that
	// takes more than 10 s, and reading them (go mod download, then
	// controller-gen for the Prometheus Operator's) takes seconds.
	if err := kubecheck.LoadCRDs(); err != nil {
		f.Fatal(err)
	}
	return c
}

// yamlDocs reads the non-empty documents of a YAML file.
func yamlDocs(file string) ([]map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var docs []map[string]any
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(m) > 0 {
			docs = append(docs, m)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents", file)
	}
	return docs, nil
}

// schemaPaths lists the fields below a schema, with their types: arrays
// by their first item, maps by a key named "key".
func schemaPaths(s map[string]any, at string, out *[]string, types map[string]string) {
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			p := at + "." + k
			*out = append(*out, p)
			types[p], _ = v.(map[string]any)["type"].(string)
			schemaPaths(v.(map[string]any), p, out, types)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		*out = append(*out, at+"[0]")
		types[at+"[0]"], _ = items["type"].(string)
		if s["x-kubernetes-preserve-unknown-fields"] != true {
			schemaPaths(items, at+"[0]", out, types)
		} else {
			types[at+"[0]"] = "object"
		}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		*out = append(*out, at+"[key]")
		types[at+"[key]"], _ = ap["type"].(string)
		schemaPaths(ap, at+"[key]", out, types)
	}
}

// seedValue is a value of a field's type, for the fuzzer to mutate.
func (c *corpus) seedValue(p string) string {
	switch c.types[p] {
	case "string":
		return `"x"`
	case "integer", "number":
		return "0"
	case "boolean":
		return "true"
	case "object":
		return "{}"
	case "array":
		if c.types[p+"[0]"] == "string" {
			return `["x"]`
		}
		return "[{}]"
	}
	return `"25%"`
}

// field picks the field a fuzz input names: itself when it is one, else one
// of them by its hash, so every mutated path still lands on a field.
func (c *corpus) field(p string) string {
	if p == "" {
		return ""
	}
	if _, ok := slices.BinarySearch(c.paths, p); ok {
		return p
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	return c.paths[int(h.Sum32()%uint32(len(c.paths)))]
}

// parseValue reads a fuzzed value: JSON when it is JSON, else the string.
func parseValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}

var pathStep = regexp.MustCompile(`^([^.\[]*)((?:\[[^\]]*\])*)`)

// setPath sets v at a path such as spec.models[0].env[1].name or
// metadata.labels[crossplane.io/claim-name] (a numeric [i] is an array
// index, any other [k] a map key), creating what is missing; nil deletes.
// It gives up on paths through values of another type.
func setPath(obj map[string]any, path string, v any) {
	type step struct {
		key   string
		index int // -1 for a key
	}
	var steps []step
	for rest := path; rest != ""; {
		m := pathStep.FindStringSubmatch(rest)
		if m == nil || m[0] == "" {
			return
		}
		if m[1] != "" {
			steps = append(steps, step{m[1], -1})
		}
		for _, b := range regexp.MustCompile(`\[([^\]]*)\]`).FindAllStringSubmatch(m[2], -1) {
			if i, err := strconv.Atoi(b[1]); err == nil && i >= 0 && i < 1024 {
				steps = append(steps, step{index: i})
			} else {
				steps = append(steps, step{key: b[1], index: -1})
			}
		}
		rest = strings.TrimPrefix(rest[len(m[0]):], ".")
	}
	var cur any = obj
	var assign func(any) = nil
	for i, s := range steps {
		last := i == len(steps)-1
		fresh := func() any {
			if steps[i+1].index >= 0 {
				return make([]any, steps[i+1].index+1)
			}
			return map[string]any{}
		}
		switch c := cur.(type) {
		case map[string]any:
			if s.index >= 0 {
				return
			}
			if last {
				if v == nil {
					delete(c, s.key)
				} else {
					c[s.key] = v
				}
				return
			}
			if c[s.key] == nil {
				c[s.key] = fresh()
			}
			key := s.key
			assign = func(n any) { c[key] = n }
			cur = c[s.key]
		case []any:
			if s.index < 0 {
				return
			}
			if s.index >= len(c) {
				c = append(c, make([]any, s.index+1-len(c))...)
				assign(c)
			}
			if last {
				c[s.index] = v
				return
			}
			if c[s.index] == nil {
				c[s.index] = fresh()
			}
			l, idx := c, s.index
			assign = func(n any) { l[idx] = n }
			cur = c[s.index]
		default:
			return
		}
	}
}

// request is the RunFunctionRequest of a reconcile of xr.
func request(xr map[string]any, input map[string]any, observed map[string]map[string]any, required map[string][]map[string]any) (*fnv1.RunFunctionRequest, error) {
	s, err := structpb.NewStruct(xr)
	if err != nil {
		return nil, err
	}
	r := &fnv1.RunFunctionRequest{Meta: &fnv1.RequestMeta{Tag: "fuzz"}, Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: s}}}
	if input != nil {
		if r.Input, err = structpb.NewStruct(input); err != nil {
			return nil, err
		}
	}
	if len(observed) > 0 {
		r.Observed.Resources = map[string]*fnv1.Resource{}
		for k, o := range observed {
			s, err := structpb.NewStruct(o)
			if err != nil {
				return nil, err
			}
			r.Observed.Resources[k] = &fnv1.Resource{Resource: s}
		}
	}
	if required != nil {
		r.RequiredResources = map[string]*fnv1.Resources{}
		for k, items := range required {
			rs := &fnv1.Resources{}
			for _, it := range items {
				s, err := structpb.NewStruct(it)
				if err != nil {
					return nil, err
				}
				rs.Items = append(rs.Items, &fnv1.Resource{Resource: s})
			}
			r.RequiredResources[k] = rs
		}
	}
	return r, nil
}

var function = fn.New(panics)

// panics keeps the last panic RunFunction recovered and logged, with its
// stack trace; it logs nothing else.
var panics = &panicLog{Logger: logging.NewNopLogger()}

type panicLog struct {
	logging.Logger // the WithValues of a nop logger: RunFunction logs a panic on its own logger

	mu   sync.Mutex
	last string
}

func (l *panicLog) Info(msg string, kv ...any) {
	if !strings.HasPrefix(msg, "RunFunction panicked") {
		return
	}
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "\n%v: %.8000v", kv[i], kv[i+1])
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = b.String()
}

func (l *panicLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.last
	l.last = ""
	return s
}

// internalError is how the Fatal message of a panic RunFunction recovered
// begins (fn/panic.go).
const internalError = "internal error: function-vllm-stack panicked"

// checkNoPanic fails the test when RunFunction recovered a panic: the
// recover keeps a bug from ending the process, the fuzzer still finds it.
func checkNoPanic(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	if msg, refused := fatalOf(rsp); refused && strings.HasPrefix(msg, internalError) {
		t.Fatalf("RunFunction panicked (its recover made the panic a Fatal result):\n%s", panics.take())
	}
}

// maxRunTime bounds one call: Crossplane gives a function 20 seconds by
// default, and the slowest input of the seeds (1000 observed conditions,
// 500 pods) takes well under a second.
const maxRunTime = 5 * time.Second

// runTwice runs the function twice on copies of r, checks both responses
// are byte for byte the same, and returns the first.
func runTwice(t *testing.T, r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	start := time.Now()
	rsp, err := function.RunFunction(context.Background(), proto.Clone(r).(*fnv1.RunFunctionRequest))
	if err != nil {
		t.Fatalf("RunFunction returned an error, want a response: %v", err)
	}
	checkNoPanic(t, rsp)
	if d := time.Since(start); d > maxRunTime {
		t.Errorf("RunFunction took %v, more than %v: Crossplane's call would time out", d, maxRunTime)
	}
	again, err := function.RunFunction(context.Background(), proto.Clone(r).(*fnv1.RunFunctionRequest))
	if err != nil {
		t.Fatalf("RunFunction returned an error the second time: %v", err)
	}
	if !sameBytes(rsp, again) {
		t.Fatalf("two runs of the same request gave different responses")
	}
	return rsp
}

func sameBytes(a, b proto.Message) bool {
	opts := proto.MarshalOptions{Deterministic: true}
	x, err1 := opts.Marshal(a)
	y, err2 := opts.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// fatalOf is the message of the response's Fatal result, if any.
func fatalOf(rsp *fnv1.RunFunctionResponse) (string, bool) {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return r.GetMessage(), true
		}
	}
	return "", false
}

// namesField is the rule a Fatal message keeps: it names a field of the
// spec (spec, spec.x, spec.models[i].y, spec: x.y), the XR's metadata.name
// or its claim's, a field of the function's Input, or, when the XR's scope
// is the problem, the XR itself and how to fix it.
var namesField = regexp.MustCompile(`(^|[^A-Za-z0-9])spec([.:\[ ]|$)|metadata\.name|the function's Input|Input [a-z]+|is cluster scoped and was not created by a claim`)

// namesField: the message keeps namesField's rule, or names a field of the
// spec by its path below spec (routerConfig.httpRoute).
func (c *corpus) namesField(msg string) bool {
	if namesField.MatchString(msg) {
		return true
	}
	for _, p := range c.relPaths {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// maxMessage bounds every message the function returns: results and
// condition messages go into events and the XR's status.
const maxMessage = 16 << 10

// checkMessages checks every result and condition message of a response is
// bounded.
func checkMessages(t *testing.T, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	for _, r := range rsp.GetResults() {
		if len(r.GetMessage()) > maxMessage {
			t.Errorf("a result message is %d bytes, more than %d: %.200s...", len(r.GetMessage()), maxMessage, r.GetMessage())
		}
	}
	for _, c := range rsp.GetConditions() {
		if len(c.GetMessage()) > maxMessage {
			t.Errorf("condition %s's message is %d bytes, more than %d: %.200s...", c.GetType(), len(c.GetMessage()), maxMessage, c.GetMessage())
		}
	}
}

// xrMeta is what Crossplane knows of an XR to compose it.
type xrMeta struct {
	apiVersion, kind, name, namespace string
	claimName, claimNamespace         string
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

// plausible reports whether the API server would store the XR's metadata
// and Crossplane send it: only such XRs must compose objects the API server
// takes (a name that is no DNS subdomain makes every name derived from it
// suspect).
func (m xrMeta) plausible() bool {
	if m.apiVersion != "serving.vllm.ai/v1alpha1" || (m.kind != "ProductionStack" && m.kind != "XProductionStack") {
		return false
	}
	if len(validation.IsDNS1123Subdomain(m.name)) > 0 {
		return false
	}
	if m.namespace != "" && len(validation.IsDNS1123Label(m.namespace)) > 0 {
		return false
	}
	if m.claimName != "" || m.claimNamespace != "" || m.namespace == "" && m.kind == "XProductionStack" {
		// Crossplane labels a claim's XR with the claim's name and
		// namespace.
		return len(validation.IsDNS1123Subdomain(m.claimName)) == 0 && len(validation.IsValidLabelValue(m.claimName)) == 0 &&
			len(validation.IsDNS1123Label(m.claimNamespace)) == 0
	}
	return true
}

// stackNamespace is where the stack's objects go.
func (m xrMeta) stackNamespace() string {
	switch {
	case m.namespace != "":
		return m.namespace
	case m.kind == "ProductionStack":
		return "default"
	}
	return m.claimNamespace
}

// applied is what Crossplane sends to the API server for each desired
// composed resource: the annotation naming its composition resource, the
// XR's labels, and the XR as controller owner.
func applied(t *testing.T, m xrMeta, rsp *fnv1.RunFunctionResponse) []kubecheck.Doc {
	t.Helper()
	var docs []kubecheck.Doc
	for _, key := range slices.Sorted(maps.Keys(rsp.GetDesired().GetResources())) {
		obj := rsp.GetDesired().GetResources()[key].GetResource().AsMap()
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
			"apiVersion": m.apiVersion, "kind": m.kind, "name": m.name, "uid": "",
			"controller": true, "blockOwnerDeletion": true,
		}}
		if m.namespace != "" {
			md["namespace"] = m.namespace // Crossplane's v2 XRs own their namespace
		}
		d, err := kubecheck.NewDoc(obj)
		if err != nil {
			t.Fatalf("desired resource %s: %v", key, err)
		}
		docs = append(docs, d)
	}
	return docs
}

// externalRefs are the objects the spec names that the stack does not
// compose: claims, ConfigMaps and ServiceAccounts the user's pods use.
func externalRefs(v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			s, _ := x.(string)
			switch k {
			case "existingClaimName", "claimName":
				out["PersistentVolumeClaim/"+s] = true
			case "serviceAccountName":
				out["ServiceAccount/"+s] = true
			case "configMap", "configMapRef", "configMapKeyRef":
				if m, ok := x.(map[string]any); ok {
					name, _ := m["name"].(string)
					out["ConfigMap/"+name] = true
				}
			}
			externalRefs(x, out)
		}
	case []any:
		for _, x := range v {
			externalRefs(x, out)
		}
	}
}

// checkObjects runs the render tests' checks on what Crossplane would apply.
func checkObjects(t *testing.T, xr map[string]any, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	m := metaOf(xr)
	ext := map[string]bool{}
	externalRefs(xr["spec"], ext)
	s := kubecheck.Stack{Namespace: m.stackNamespace(), External: slices.Sorted(maps.Keys(ext)), AsAPIServer: true}
	if len(validation.IsValidLabelValue(m.name)) == 0 {
		s.Composite = m.name
	}
	var err error
	if s.XR, err = kubecheck.NewDoc(map[string]any{"apiVersion": m.apiVersion, "kind": m.kind, "metadata": map[string]any{"name": m.name}}); err != nil {
		t.Fatal(err)
	}
	r := &kubecheck.Recorder{}
	if errs := r.Run(func() { kubecheck.Check(r, s, applied(t, m, rsp)) }); len(errs) > 0 {
		t.Errorf("the function composed objects the API server would refuse:\n%s", strings.Join(errs, "\n"))
	}
}
