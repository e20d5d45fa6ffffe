package fn

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
)

// canaryXR is a model at 9 replicas (behind the router, or the inference
// extension with ext), with a canary block when canary is not nil.
func canaryXR(ext bool, canary map[string]any) map[string]any {
	kv := []any{"replicas", 9}
	if ext {
		kv = append(kv, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}})
	}
	if canary != nil {
		kv = append(kv, "model.canary", canary)
	}
	return with(kv...)
}

// resourceOf is a desired resource of rsp as a map, nil when not composed.
func resourceOf(rsp *fnv1.RunFunctionResponse, key string) map[string]any {
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		return nil
	}
	return r.GetResource().AsMap()
}

// sameResources fails unless every key of want is composed by got with the
// same bytes.
func sameResources(t *testing.T, step string, want, got *fnv1.RunFunctionResponse, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if diff := cmp.Diff(resourceOf(want, k), resourceOf(got, k)); diff != "" {
			t.Errorf("%s: %s changed (-before +after):\n%s", step, k, diff)
		}
	}
}

// versionsOf are status.models[].version of a response, by "name/version".
func versionsOf(rsp *fnv1.RunFunctionResponse) map[string]any {
	out := map[string]any{}
	models, _ := xrStatus(rsp)["models"].([]any)
	for _, m := range models {
		mm := m.(map[string]any)
		v, _ := mm["version"].(map[string]any)
		name, _ := v["name"].(string)
		out[mm["name"].(string)+"/"+name] = v
	}
	return out
}

func canaryKeys(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for _, k := range keys(rsp) {
		if strings.HasPrefix(k, "engine-m-canary") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// routeWeights are the pools and weights of the model's route's first rule.
func routeWeights(rsp *fnv1.RunFunctionResponse) []string {
	route := resourceOf(rsp, "engine-m-httproute")
	rules, _ := route["spec"].(map[string]any)["rules"].([]any)
	var out []string
	for _, r := range rules[0].(map[string]any)["backendRefs"].([]any) {
		b := r.(map[string]any)
		w := "-"
		if v, ok := b["weight"].(float64); ok {
			w = strconv.FormatFloat(v, 'f', -1, 64)
		}
		out = append(out, b["name"].(string)+"="+w)
	}
	return out
}

// TestCanarySequence (issue 43 item 3): a canary added beside a serving
// model composes its own objects under its own keys and changes none of the
// model's; its weight is the route's split behind the extension and its
// share of the engines behind the router; promote rolls the model to the
// canary's settings while the canary keeps serving, and the canary's objects
// go only once the model's workload is observed ready with them; they do
// not come back; folding the canary into the model then rolls nothing.
func TestCanarySequence(t *testing.T) {
	for _, ext := range []bool{false, true} {
		t.Run(map[bool]string{false: "router", true: "extension"}[ext], func(t *testing.T) {
			stable := mustRun(t, req(t, canaryXR(ext, nil), nil, nil))
			modelKeys := slices.DeleteFunc(keys(stable), func(k string) bool { return k == "engine-m-httproute" })
			slices.Sort(modelKeys)

			// Add: 10 %.
			canary := map[string]any{"weight": 10, "revision": "v2"}
			added := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, stable)))
			sameResources(t, "add", stable, added, modelKeys...)
			want := []string{"engine-m-canary", "engine-m-canary-service", "engine-m-canary-storage"}
			if ext {
				want = append(want, "engine-m-canary-epp", "engine-m-canary-epp-config", "engine-m-canary-epp-role", "engine-m-canary-epp-service", "engine-m-canary-epp-serviceaccount", "engine-m-canary-inferencepool")
			}
			slices.Sort(want)
			if got := canaryKeys(added); !slices.Equal(got, want) {
				t.Fatalf("canary keys %v, want %v", got, want)
			}
			if c := conditionOf(added, "EnginesReady"); c.GetMessage() != "0/1 models ready. m (canary): Deployment s-m-canary-deployment-vllm is not created yet" {
				t.Errorf("EnginesReady while the canary is created: %q", c.GetMessage())
			}
			d := desired(t, added, "engine-m-canary", &appsv1.Deployment{})
			if d.Name != "s-m-canary-deployment-vllm" || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--revision=v2") {
				t.Errorf("canary Deployment %s args %q: want s-m-canary-deployment-vllm with --revision=v2", d.Name, d.Spec.Template.Spec.Containers[0].Args)
			}
			if l := d.Spec.Template.Labels; l["model"] != "m-canary" || l["app.kubernetes.io/name"] != "m-canary" || l["serving.vllm.ai/version"] != "canary" || l["app.kubernetes.io/component"] != "serving-engine" {
				t.Errorf("canary pod labels %v", l)
			}
			wantReplicas := int32(1) // behind the router round(10 × 9 / 90)
			if *d.Spec.Replicas != wantReplicas {
				t.Errorf("canary replicas %d, want %d", *d.Spec.Replicas, wantReplicas)
			}
			if ext {
				if got, want := routeWeights(added), []string{"s-m-pool=90", "s-m-canary-pool=10"}; !slices.Equal(got, want) {
					t.Errorf("route backends %v, want %v", got, want)
				}
				sel := resourceOf(added, "engine-m-canary-inferencepool")["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
				if sel["app.kubernetes.io/name"] != "m-canary" {
					t.Errorf("canary pool selector %v: want its own pods (app.kubernetes.io/name m-canary)", sel)
				}
			}
			if got, want := xrStatus(added)["endpoint"], map[bool]any{false: "http://s-router-service.llm.svc.cluster.local/v1", true: "gateway llm/gw /v1 (m), /m/v1"}[ext]; got != want {
				t.Errorf("status.endpoint %q, want %q", got, want)
			}
			if v := versionsOf(added); !maps.EqualFunc(v, map[string]any{
				"m/Stable": map[string]any{"name": "Stable", "share": float64(90), "state": "Serving"},
				"m/Canary": map[string]any{"name": "Canary", "share": float64(10), "state": "Serving"},
			}, func(a, b any) bool { return cmp.Equal(a, b) }) {
				t.Errorf("status versions %v", v)
			}

			// Weight: 50 %.
			canary["weight"] = 50
			weighted := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, added)))
			sameResources(t, "weight", stable, weighted, modelKeys...)
			if ext {
				if got, want := routeWeights(weighted), []string{"s-m-pool=50", "s-m-canary-pool=50"}; !slices.Equal(got, want) {
					t.Errorf("route backends %v, want %v", got, want)
				}
				sameResources(t, "weight", added, weighted, "engine-m-canary")
			} else if r := *desired(t, weighted, "engine-m-canary", &appsv1.Deployment{}).Spec.Replicas; r != 9 {
				t.Errorf("behind the router weight 50 beside 9: canary replicas %d, want 9", r)
			}

			// Promote: the model rolls to v2; the canary serves as before.
			canary["promote"] = true
			promoting := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, weighted)))
			sameResources(t, "promote", weighted, promoting, canaryKeys(weighted)...)
			m := desired(t, promoting, "engine-m", &appsv1.Deployment{})
			if !slices.Contains(m.Spec.Template.Spec.Containers[0].Args, "--revision=v2") || m.Annotations["serving.vllm.ai/canary-promoted"] == "" {
				t.Errorf("promoting: model args %q annotations %v: want --revision=v2 and the promotion's mark", m.Spec.Template.Spec.Containers[0].Args, m.Annotations)
			}
			if *m.Spec.Replicas != 9 {
				t.Errorf("promoting: model replicas %d, want its own 9", *m.Spec.Replicas)
			}
			if v := versionsOf(promoting)["m/Stable"].(map[string]any); v["state"] != "Promoting" {
				t.Errorf("promoting: status %v", v)
			}

			// The model rolls (not ready): the canary stays.
			rolling := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, promoting, "engine-m")))
			sameResources(t, "rolling", weighted, rolling, canaryKeys(weighted)...)

			// The model is ready at v2: the canary goes; the route sends it all.
			promoted := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, rolling)))
			if got := canaryKeys(promoted); len(got) != 0 {
				t.Fatalf("promoted: canary objects %v still composed", got)
			}
			if ext {
				if got, want := routeWeights(promoted), []string{"s-m-pool=-"}; !slices.Equal(got, want) {
					t.Errorf("promoted: route backends %v, want %v", got, want)
				}
			}
			if v := versionsOf(promoted); !cmp.Equal(v, map[string]any{"m/Stable": map[string]any{"name": "Stable", "share": float64(100), "state": "Promoted"}}) {
				t.Errorf("promoted: status versions %v", v)
			}

			// A model pod fails later: the canary does not come back.
			failed := mustRun(t, req(t, canaryXR(ext, canary), nil, observeAll(t, promoted, "engine-m")))
			if got := canaryKeys(failed); len(got) != 0 {
				t.Errorf("a model not ready after the promotion brings the canary back: %v", got)
			}

			// Fold the canary into the model: its pods do not roll.
			xr := canaryXR(ext, nil)
			setPath(xr, "spec.model.revision", "v2")
			folded := mustRun(t, req(t, xr, nil, observeAll(t, promoted)))
			before := desired(t, promoted, "engine-m", &appsv1.Deployment{})
			after := desired(t, folded, "engine-m", &appsv1.Deployment{})
			if diff := cmp.Diff(before.Spec, after.Spec); diff != "" {
				t.Errorf("folding the promoted canary into the model changes its Deployment's spec (-promoted +folded):\n%s", diff)
			}
		})
	}
}

// TestCanaryAbort (issue 43 item 3): removing the canary block removes
// every canary object and leaves the stack byte for byte as before the
// canary was added; nothing of the model changes while it runs.
func TestCanaryAbort(t *testing.T) {
	for _, ext := range []bool{false, true} {
		t.Run(map[bool]string{false: "router", true: "extension"}[ext], func(t *testing.T) {
			first := mustRun(t, req(t, canaryXR(ext, nil), nil, nil))
			before := mustRun(t, req(t, canaryXR(ext, nil), nil, observeAll(t, first))) // with the RoleBindings
			added := mustRun(t, req(t, canaryXR(ext, map[string]any{"weight": 20, "extraArgs": []any{"--max-num-batched-tokens=4096"}}), nil, observeAll(t, before)))
			if len(canaryKeys(added)) == 0 {
				t.Fatal("no canary composed")
			}
			aborted := mustRun(t, req(t, canaryXR(ext, nil), nil, observeAll(t, added)))
			if got, want := desiredKeys(aborted), desiredKeys(before); !slices.Equal(got, want) {
				t.Fatalf("after abort keys %v, want %v", got, want)
			}
			sameResources(t, "abort", before, aborted, keys(before)...)
			if v := versionsOf(aborted); len(v) != 1 || v["m/"].(map[string]any) != nil {
				t.Errorf("after abort status versions %v, want none", v)
			}
		})
	}
}

// conditionOf is the condition of type typ of a response, nil when none.
func conditionOf(rsp *fnv1.RunFunctionResponse, typ string) *fnv1.Condition {
	for _, c := range rsp.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}
