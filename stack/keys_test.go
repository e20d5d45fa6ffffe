package stack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/internal/fuzzseeds"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// keyKinds records the API group and kind each composition resource name
// was seen with, and where first.
type keyKinds struct {
	t    *testing.T
	seen map[string][2]string // key: group/kind, where
	n    int
}

func (k *keyKinds) add(where string, rsp response) {
	k.t.Helper()
	if rsp.refusal != "" {
		return
	}
	for _, key := range rsp.keys {
		gvk := rsp.objects[key].GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" {
			k.t.Errorf("%s: %s declares no kind: the rule that a key keeps its kind cannot hold it", where, key)
			continue
		}
		gk := schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}.String()
		k.n++
		if prev, ok := k.seen[key]; !ok {
			k.seen[key] = [2]string{gk, where}
		} else if prev[0] != gk {
			k.t.Errorf("composition resource name %s is %s in %s and %s in %s: a key never changes kind or API group", key, prev[0], prev[1], gk, where)
		}
		if strings.HasSuffix(key, "-autoscaler") && key != names.RouterAutoscalerKey {
			k.t.Errorf("%s: composes %s, a retired key (retiredEngineAutoscalerKey)", where, key)
		}
	}
}

// TestKeysNeverChangeKind renders every stack the tests know (the example
// and test stacks, the fuzz seeds' stacks with each of their blocks' values),
// at every vLLM, router and picker release, with each autoscaler and none,
// and fails if a composition resource name is ever seen with two kinds or
// API groups (transition/keys.go).
func TestKeysNeverChangeKind(t *testing.T) {
	k := &keyKinds{t: t, seen: map[string][2]string{}}
	render := func(where string, xr map[string]any) {
		t.Helper()
		k.add(where, reconciled(t, xr, stacktest.InputFor(xr)))
	}
	newestVLLM, newestRouter := stacktest.VLLMReleases[len(stacktest.VLLMReleases)-1], "HEAD"
	for _, path := range stacktest.Stacks(t) {
		for _, v := range stacktest.VLLMReleases {
			xr := stacktest.LoadXR(t, path, "")
			pinVersions(xr, v, newestRouter)
			render(fmt.Sprintf("%s, vLLM %s", path, v), xr)
		}
		for _, r := range stacktest.RouterReleases {
			xr := stacktest.LoadXR(t, path, "")
			pinVersions(xr, newestVLLM, r)
			render(fmt.Sprintf("%s, router %s", path, r), xr)
		}
		if xr := stacktest.LoadXR(t, path, ""); xr["spec"].(map[string]any)["inferenceExtension"] != nil {
			for repo, kind := range map[string]string{"registry.k8s.io/gateway-api-inference-extension/epp": "gaie", "ghcr.io/llm-d/llm-d-router-endpoint-picker": "llm-d"} {
				for _, p := range stacktest.Releases[kind] {
					xr := stacktest.LoadXR(t, path, "")
					stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", repo+":v"+p)
					render(fmt.Sprintf("%s, %s %s", path, kind, p), xr)
				}
			}
		}
	}
	// The fuzz seeds' stacks, each block's values set.
	for _, b := range fuzzseeds.Blocks {
		stackPath, asItem := strings.CutSuffix(b.Stack, " as models[0]")
		for field, value := range fuzzseeds.Values {
			if strings.HasPrefix(field, "group") || strings.Contains(field, "[") {
				continue
			}
			xr := stacktest.LoadXR(t, "../"+stackPath, "")
			if asItem {
				spec := xr["spec"].(map[string]any)
				item := map[string]any{}
				for _, f := range []string{"model", "vllmConfig", "resources", "disaggregation", "multiNode", "storage", "replicas"} {
					if v, ok := spec[f]; ok {
						item[f] = v
						delete(spec, f)
					}
				}
				if m, ok := item["model"].(map[string]any); ok {
					delete(item, "model")
					for f, v := range m {
						item[f] = v
					}
				}
				spec["models"] = []any{item}
			}
			p := strings.TrimPrefix(b.Prefix, "spec.")
			if !strings.HasSuffix(p, field) {
				p += "." + field
			}
			stacktest.SetPath(xr, "spec."+p, asJSON[any](t, jsonValue(t, value)))
			render(fmt.Sprintf("%s, %s = %s", b.Stack, p, value), xr)
		}
	}
	// Each autoscaler of a model and the router's, and a model named like
	// another's key.
	for name, kv := range map[string][]any{
		"keda":        {"autoscaling", map[string]any{"maxReplicas": 3, "prometheusAddress": "http://p:9090"}},
		"hpa":         {"autoscaling", map[string]any{"type": "hpa", "maxReplicas": 3}, "routerConfig.autoscaling", map[string]any{"maxReplicas": 2}},
		"scaleToZero": {"scaleToZero", map[string]any{"maxReplicas": 3, "prometheusAddress": "http://p:9090"}},
		"off":         {"autoscaling", map[string]any{"enabled": false, "maxReplicas": 3}},
	} {
		render(name, with(kv...))
		render(name+" on the extension", gieXR(kv...))
	}
	t.Logf("%d keys, %d objects checked", len(k.seen), k.n)
	if k.n == 0 {
		t.Fatal("nothing rendered")
	}
}

// jsonValue parses a JSON value of fuzzseeds.Values.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	return stacktest.AsJSON[any](t, stacktest.XRYAML(t, "v: "+s)["v"])
}

// TestKindChangeWithheld: an object is never composed under a key whose
// observed object is of another kind or group (a model renamed onto
// another's key), nor a model's autoscaler while another of its
// autoscalers is observed: each waits until Crossplane has deleted the old
// one.
func TestKindChangeWithheld(t *testing.T) {
	hpa := with("autoscaling", map[string]any{"type": "hpa", "maxReplicas": 3})
	keda := with("autoscaling", map[string]any{"maxReplicas": 3, "prometheusAddress": "http://p:9090"})
	for name, tc := range map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		withheld []string
	}{
		"hpa while the ScaledObject is observed": {hpa, map[string]map[string]any{
			"engine-m-scaledobject": observedObj("keda.sh/v1alpha1", "ScaledObject", "s-m-scaledobject")}, []string{"engine-m-hpa"}},
		"ScaledObject while the HPA is observed": {keda, map[string]map[string]any{
			"engine-m-hpa": observedObj("autoscaling/v2", "HorizontalPodAutoscaler", "s-m-hpa")}, []string{"engine-m-scaledobject"}},
		"ScaledObject while the retired key is observed": {keda, map[string]map[string]any{
			"engine-m-autoscaler": observedObj("keda.sh/v1alpha1", "ScaledObject", "s-m-scaledobject")}, []string{"engine-m-scaledobject"}},
		"hpa alone":       {hpa, map[string]map[string]any{"engine-m-hpa": observedObj("autoscaling/v2", "HorizontalPodAutoscaler", "s-m-hpa")}, nil},
		"another version": {hpa, map[string]map[string]any{"engine-m-hpa": observedObj("autoscaling/v1", "HorizontalPodAutoscaler", "s-m-hpa")}, nil},
		"a key of another kind": {with(), map[string]map[string]any{
			"engine-m-service": observedObj("apps/v1", "Deployment", "s-m-service-deployment-vllm")}, []string{"engine-m-service"}},
		"a key of another group": {with(), map[string]map[string]any{
			"engine-m": observedObj("example.com/v1", "Deployment", "s-m-deployment-vllm")}, []string{"engine-m"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := readyStack(t, tc.xr)
			objs, err := s.Compose(fakeObserved{objects: tc.observed})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Withheld(); !slices.Equal(got, tc.withheld) {
				t.Errorf("withheld %v, want %v", got, tc.withheld)
			}
			for _, o := range objs {
				if slices.Contains(tc.withheld, o.Key) {
					t.Errorf("%s composed", o.Key)
				}
			}
		})
	}
}

// readyStack is a valid stack of xr, for Compose.
func readyStack(t *testing.T, xr map[string]any) *Stack {
	t.Helper()
	m := stacktestRead(t, xr)
	s := New(m.id, m.spec, nil)
	if err := s.Validate(m.raw).Err(); err != nil {
		t.Fatal(err)
	}
	return s
}
