package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	appsv1 "k8s.io/api/apps/v1"
)

// TestCanaryRefusals (issue 43 item 3): what a canary cannot be combined
// with is refused, naming the field and the fix.
func TestCanaryRefusals(t *testing.T) {
	ext := map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}
	cases := []struct {
		name string
		xr   map[string]any
		want string
	}{
		{"changes nothing", with("model.canary", map[string]any{"weight": 10}),
			"spec.model.canary changes nothing of the model: set the canary's revision, image, engineVersion"},
		{"disaggregated", with("model.canary", map[string]any{"weight": 10, "revision": "v2"}, "disaggregation", map[string]any{}),
			"spec.model.canary: a disaggregated model cannot have a canary yet: its prefill and decode groups of two versions must never pair"},
		{"scale to zero", with("model.canary", map[string]any{"weight": 10, "revision": "v2"}, "scaleToZero", map[string]any{"maxReplicas": 2}, "inferenceExtension", ext),
			"spec.model.canary: a model that scales to zero (spec.scaleToZero) cannot have a canary"},
		{"router weight 100", with("model.canary", map[string]any{"weight": 100, "revision": "v2"}),
			"spec.model.canary.weight 100: the production-stack router sends a model's requests to every ready engine that serves it"},
		{"router replicas", with("model.canary", map[string]any{"weight": 10, "revision": "v2", "replicas": 2}),
			"spec.model.canary.replicas: behind the production-stack router the canary's share is its share of the model's engines, so the weight sets its replicas"},
		{"router autoscaling", with("model.canary", map[string]any{"weight": 10, "revision": "v2"}, "autoscaling", map[string]any{"maxReplicas": 4}),
			"spec.model.canary: behind the production-stack router the canary's share is its share of the model's engines, and the model's autoscaler (spec.autoscaling)"},
		// The name clients use cannot differ between the versions: it is not
		// in the canary block, and its flag in the canary's extraArgs is
		// refused there.
		{"served name", with("model.canary", map[string]any{"weight": 10, "extraArgs": []any{"--served-model-name=x"}}),
			`spec.model.canary.extraArgs[0] "--served-model-name=x" is refused: spec.model.servedModelName sets --served-model-name`},
		{"models[] item", with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "org/a", "canary": map[string]any{"weight": 10}}}),
			"spec.models[0].canary changes nothing of the model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := refusal(t, c.xr); !strings.Contains(got, c.want) {
				t.Errorf("refusal %q\nwant it to contain %q", got, c.want)
			}
		})
	}
}

// TestCanaryRouterShare: behind the router the weight becomes the canary's
// replicas, and a weight the replicas cannot give is warned with the
// arithmetic; behind the extension the canary's own replicas (default 1)
// serve whatever the weight.
func TestCanaryRouterShare(t *testing.T) {
	for _, c := range []struct{ weight, model, want int32 }{
		{10, 9, 1}, {50, 9, 9}, {25, 3, 1}, {5, 1, 1}, {0, 4, 0}, {90, 1, 9}, {33, 2, 1},
	} {
		if got := resolve.CanaryRouterReplicas(c.weight, c.model); got != c.want {
			t.Errorf("CanaryRouterReplicas(%d, %d) = %d, want %d", c.weight, c.model, got, c.want)
		}
	}
	rsp := mustRun(t, req(t, with("replicas", 2, "model.canary", map[string]any{"weight": 10, "revision": "v2"}), nil, nil))
	want := "spec.model.canary.weight 10: behind the production-stack router the canary's share is its share of the model's ready engines: 1 canary beside 2 makes 1 of 3 = 33%, not 10%: set a weight the replicas give exactly (33), or change the model's replicas"
	if !slices.Contains(rsp.warnings, want) {
		t.Errorf("warnings %q\nwant %q", rsp.warnings, want)
	}
	if w := mustRun(t, req(t, with("replicas", 9, "model.canary", map[string]any{"weight": 10, "revision": "v2"}), nil, nil)).warnings; slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "canary") }) {
		t.Errorf("1 canary beside 9 is exactly 10%%, yet warned: %q", w)
	}
}

// TestCanaryNameClash: a model named like another's canary would share its
// objects' names and keys; the stack is refused naming both.
func TestCanaryNameClash(t *testing.T) {
	xr := with("model", nil, "models", []any{
		map[string]any{"name": "a", "modelURL": "org/a", "canary": map[string]any{"weight": 10, "revision": "v2"}},
		map[string]any{"name": "a-canary", "modelURL": "org/b"},
	})
	got := refusal(t, xr)
	if want := `spec.models[1].name "a-canary" and the canary of spec.models[0].name "a" both make the composition resource name engine-a-canary: rename the model`; !strings.Contains(got, want) {
		t.Errorf("refusal %q\nwant it to contain %q", got, want)
	}
}

// TestCanaryShapes: a multi-node model's canary is a LeaderWorkerSet of
// its own; behind the extension an autoscaled model's canary keeps fixed
// replicas (no autoscaler of its own), and its pool has no objectives.
func TestCanaryShapes(t *testing.T) {
	mn := mustRun(t, req(t, with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "vllmConfig.pipelineParallelSize", 2,
		"multiNode", map[string]any{"podsPerReplica": 2}, "storage", map[string]any{"accessModes": []any{"ReadWriteMany"}}, "model.canary", map[string]any{"weight": 10, "revision": "v2"}), nil, nil))
	for _, k := range []string{"engine-m-leaderworkerset", "engine-m-canary-leaderworkerset", "engine-m-canary-service"} {
		if !slices.Contains(keys(mn), k) {
			t.Errorf("multi-node canary: no %s in %v", k, keys(mn))
		}
	}
	ext := map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}
	as := mustRun(t, req(t, with("inferenceExtension", ext, "autoscaling", map[string]any{"maxReplicas": 4, "prometheusAddress": "http://prometheus:9090"},
		"model.inferenceObjectives", []any{map[string]any{"name": "batch", "priority": -1}},
		"model.canary", map[string]any{"weight": 10, "revision": "v2", "replicas": 2}), nil, nil))
	var canaryAutoscaler, canaryObjective bool
	for _, k := range keys(as) {
		canaryAutoscaler = canaryAutoscaler || k == "engine-m-canary-scaledobject" || k == "engine-m-canary-hpa"
		canaryObjective = canaryObjective || strings.HasPrefix(k, "engine-m-canary-objective-")
	}
	if canaryAutoscaler || canaryObjective || !slices.Contains(keys(as), "engine-m-scaledobject") {
		t.Errorf("autoscaled model's canary: keys %v: want the model's ScaledObject only, no canary autoscaler or objective", keys(as))
	}
	if d := desired(t, as, "engine-m-canary", &appsv1.Deployment{}); d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("canary replicas %v, want canary.replicas 2", d.Spec.Replicas)
	}
	want := "spec.model.canary: the canary's pool has no InferenceObjectives"
	if !slices.ContainsFunc(as.warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q: want %q", as.warnings, want)
	}
}

// TestCanaryPromoteRecreate: promoting over a Recreate strategy is warned:
// the model's engines all stop first.
func TestCanaryPromoteRecreate(t *testing.T) {
	rsp := mustRun(t, req(t, with("deploymentStrategy", "Recreate", "replicas", 9, "model.canary", map[string]any{"weight": 10, "revision": "v2", "promote": true}), nil, nil))
	want := "spec.model.canary.promote: the model's deploymentStrategy is Recreate (spec.deploymentStrategy), so its engines all stop before those with the canary's settings start"
	if !slices.ContainsFunc(rsp.warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q\nwant %q", rsp.warnings, want)
	}
}
