package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// drainSeen is what an engine pod template says about its drain: the
// --shutdown-timeout vLLM gets ("" without), the vllm container's preStop
// sleep, the pod's grace period (0 unset).
type drainSeen struct {
	Flag           string
	PreStop, Grace int64
}

func drainSeenOf(pod corev1.PodSpec) drainSeen {
	c := pod.Containers[0]
	d := drainSeen{PreStop: preStopSleep(c), Grace: ptr.Deref(pod.TerminationGracePeriodSeconds, 0)}
	if v, ok := stacktest.ArgValue(c.Args, "--shutdown-timeout"); ok {
		d.Flag = v
	}
	return d
}

// TestDrain (issue 43): engines drain by default. On a release with
// --shutdown-timeout (0.19.0 on) vLLM drains after a short preStop sleep in
// which the routing layer drops the pod; on older releases, and for a
// prefill engine whose drain does not wait for decode to read its KV
// (before 0.22.0), the preStop sleep holds the drain; the grace period
// covers the sleep, vLLM's drain and 20 s to exit.
func TestDrain(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		key  string
		want drainSeen
	}{
		"Default":          {xr: minimalXR(), want: drainSeen{"30", 5, 55}},
		"Configured":       {xr: with("shutdown", map[string]any{"drainSeconds": 120, "routingDelaySeconds": 10}), want: drainSeen{"120", 10, 150}},
		"ModelOverrides":   {xr: with("model", nil, "shutdown", map[string]any{"drainSeconds": 120}, "models", []any{map[string]any{"name": "m", "modelURL": "org/m", "shutdown": map[string]any{"drainSeconds": 60}}}), want: drainSeen{"60", 5, 85}},
		"AbortAtOnce":      {xr: with("shutdown", map[string]any{"drainSeconds": 0, "routingDelaySeconds": 0}), want: drainSeen{"0", 0, 0}},
		"DelayOnly":        {xr: with("shutdown", map[string]any{"drainSeconds": 0}), want: drainSeen{"0", 5, 25}},
		"PreStopBefore019": {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.16.0"), want: drainSeen{"", 35, 55}},
		"At019":            {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.19.0"), want: drainSeen{"30", 5, 55}},
		"PrefillBefore022": {xr: pdXR("vllmConfig.image", "vllm/vllm-openai:v0.20.0"), key: "engine-m-prefill", want: drainSeen{"30", 35, 85}},
		"DecodeBefore022":  {xr: pdXR("vllmConfig.image", "vllm/vllm-openai:v0.20.0"), key: "engine-m-decode", want: drainSeen{"30", 5, 55}},
		"PrefillFrom022":   {xr: pdXR("vllmConfig.image", "vllm/vllm-openai:v0.22.0"), key: "engine-m-prefill", want: drainSeen{"30", 5, 55}},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := reconciled(t, tc.xr, nil)
			if rsp.refusal != "" {
				t.Fatal(rsp.refusal)
			}
			key := tc.key
			if key == "" {
				key = "engine-m"
			}
			d := desired(t, rsp, key, &appsv1.Deployment{})
			if diff := cmp.Diff(tc.want, drainSeenOf(d.Spec.Template.Spec)); diff != "" {
				t.Errorf("drain (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDrainMultiNode: a multi-node group's workers outlive their leader's
// drain (the leader fails every request in flight when a worker goes).
func TestDrainMultiNode(t *testing.T) {
	l := desired(t, mustRun(t, req(t, mnXR("vllmConfig.image", "vllm/vllm-openai:v0.22.0"), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	tpl := l.Spec.LeaderWorkerTemplate
	if diff := cmp.Diff(drainSeen{"30", 5, 55}, drainSeenOf(tpl.LeaderTemplate.Spec)); diff != "" {
		t.Errorf("leader drain (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(drainSeen{"30", 35, 85}, drainSeenOf(tpl.WorkerTemplate.Spec)); diff != "" {
		t.Errorf("worker drain (-want +got):\n%s", diff)
	}
}

// TestDrainRefusals: --shutdown-timeout belongs to shutdown.drainSeconds,
// which also sizes the grace period and the preStop sleep.
func TestDrainRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"ExtraArgs": {xr: with("vllmConfig.extraArgs", []any{"--shutdown-timeout=60"}),
			want: `spec.vllmConfig.extraArgs[0] "--shutdown-timeout=60" is refused: spec.shutdown.drainSeconds sets --shutdown-timeout; set it there, not in extraArgs`},
		"ExtraArgsSpelled": {xr: with("model", nil, "models", []any{map[string]any{"name": "m", "modelURL": "org/m", "shutdown": map[string]any{"drainSeconds": 10}, "vllmConfig": map[string]any{"extraArgs": []any{"--shutdown_timeout", "60"}}}}),
			want: `spec.models[0].vllmConfig.extraArgs[0] "--shutdown_timeout" is refused: vLLM's parser takes it for --shutdown-timeout, and spec.models[0].shutdown.drainSeconds sets --shutdown-timeout; set it there, not in extraArgs`},
	} {
		t.Run(name, func(t *testing.T) {
			got := refusal(t, tc.xr)
			if got != "invalid ProductionStack: "+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// TestDrainOldRouter: a router before 0.1.7 keeps a pod being deleted while
// its containers are ready, so the stack warns; the endpoint picker and
// later routers drop it on its deletion.
func TestDrainOldRouter(t *testing.T) {
	const want = "spec.shutdown: router 0.1.6 (routerConfig.image lmcache/lmstack-router:v0.1.6) keeps sending requests to an engine pod that is being deleted until it exits (router 0.1.7 and later drop it at once), so requests that reach a draining engine fail: use a router image of 0.1.7 or later"
	if got := warningsOf(t, with("routerConfig.image", "lmcache/lmstack-router:v0.1.6")); !slices.Contains(got, want) {
		t.Errorf("warnings: %q\nwant %q", got, want)
	}
	for _, xr := range []map[string]any{
		with("routerConfig.image", "lmcache/lmstack-router:v0.1.7"),
		with("routerConfig.image", "lmcache/lmstack-router:v0.1.6", "shutdown", map[string]any{"drainSeconds": 0, "routingDelaySeconds": 0}),
	} {
		for _, w := range warningsOf(t, xr) {
			if strings.Contains(w, "shutdown") {
				t.Errorf("unexpected warning: %s", w)
			}
		}
	}
}
