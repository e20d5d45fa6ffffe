package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// mnXR is minimalXR spread over two pods of two GPUs: tensor parallel 2 in
// a pod, two pipeline stages, on vLLM 0.12.0 with a model cache every node
// can mount.
func mnXR(kv ...any) map[string]any {
	return with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2},
		"vllmConfig.tensorParallelSize", 2, "vllmConfig.pipelineParallelSize", 2, "resources.gpu", "2",
		"storage.accessModes", []any{"ReadWriteMany"}}, kv...)...)
}

// TestMultiNodeEngines: a multi-node model is a LeaderWorkerSet whose
// leader and workers run the same `vllm serve`, ranked, the workers
// headless, without the API port or probes and under another component, so
// the Service and the router see leaders only.
func TestMultiNodeEngines(t *testing.T) {
	rsp := reconciled(t, mnXR("replicas", 3), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	if diff := cmp.Diff([]string{"engine-m-leaderworkerset", "engine-m-service", "engine-m-storage", "router-serviceaccount", "router-role", "router-rolebinding", "router", "router-service"}, keys(rsp)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	l := desired(t, rsp, "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	if l.Name != "s-m-lws" || *l.Spec.Replicas != 3 || *l.Spec.LeaderWorkerTemplate.Size != 2 ||
		l.Spec.LeaderWorkerTemplate.RestartPolicy != lwsv1.RecreateGroupOnPodRestart || l.Spec.StartupPolicy != lwsv1.LeaderCreatedStartupPolicy {
		t.Errorf("LeaderWorkerSet %s: replicas %d, size %d, restartPolicy %s, startupPolicy %s", l.Name, *l.Spec.Replicas, *l.Spec.LeaderWorkerTemplate.Size, l.Spec.LeaderWorkerTemplate.RestartPolicy, l.Spec.StartupPolicy)
	}
	common := []string{"org/m", "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size=2", "--pipeline-parallel-size=2", "--nnodes=2"}
	leader, worker := l.Spec.LeaderWorkerTemplate.LeaderTemplate, l.Spec.LeaderWorkerTemplate.WorkerTemplate
	for _, tc := range []struct {
		name      string
		tmpl      corev1.PodTemplateSpec
		args      []string
		component string
		model     string
		ports     int
		probes    bool
	}{
		{"leader", *leader, append(common, "--node-rank", "0", "--master-addr", "$(LWS_LEADER_ADDRESS)"), names.ComponentEngine, "m", 1, true},
		{"worker", worker, append(common, "--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--headless"), names.ComponentEngineWorker, "", 0, false},
	} {
		c := tc.tmpl.Spec.Containers[0]
		if diff := cmp.Diff(tc.args, c.Args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tc.name, diff)
		}
		if got := tc.tmpl.Labels[names.LabelComponent]; got != tc.component {
			t.Errorf("%s component %q, want %q", tc.name, got, tc.component)
		}
		if got := tc.tmpl.Labels["model"]; got != tc.model {
			t.Errorf("%s label model %q, want %q", tc.name, got, tc.model)
		}
		if len(c.Ports) != tc.ports || (c.StartupProbe != nil) != tc.probes || (c.ReadinessProbe != nil) != tc.probes || (c.LivenessProbe != nil) != tc.probes {
			t.Errorf("%s: ports %v, probes %v %v %v", tc.name, c.Ports, c.StartupProbe, c.ReadinessProbe, c.LivenessProbe)
		}
		if got := c.Resources.Limits.Name("nvidia.com/gpu", "").String(); got != "2" {
			t.Errorf("%s: %s GPUs, want 2", tc.name, got)
		}
	}
	svc := desired(t, rsp, "engine-m-service", &corev1.Service{})
	if svc.Spec.Selector[names.LabelComponent] != names.ComponentEngine {
		t.Errorf("Service selector %v: want the leaders' component", svc.Spec.Selector)
	}
}

// TestMultiNodeExample: example/stacks/multi-node.yaml composes without a
// warning.
func TestMultiNodeExample(t *testing.T) {
	rsp := mustRun(t, req(t, stacktest.LoadXR(t, "../example/stacks/multi-node.yaml", ""), nil, nil))
	if len(rsp.warnings) > 0 {
		t.Errorf("warnings: %q", rsp.warnings)
	}
}

// TestMultiNodeRollout: groups are replaced one at a time unless
// rollingUpdate says otherwise; what it leaves out is LWS's default.
func TestMultiNodeRollout(t *testing.T) {
	l := desired(t, mustRun(t, req(t, mnXR(), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	if r := l.Spec.RolloutStrategy; r.Type != lwsv1.RollingUpdateStrategyType || r.RollingUpdateConfiguration != nil {
		t.Errorf("default rollout %+v", r)
	}
	l = desired(t, mustRun(t, req(t, mnXR("rollingUpdate", map[string]any{"maxSurge": 1}), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	if c := l.Spec.RolloutStrategy.RollingUpdateConfiguration; c == nil || c.MaxSurge.IntValue() != 1 || c.MaxUnavailable.IntValue() != 1 {
		t.Errorf("rollout with maxSurge 1: %+v", c)
	}
	// What LWS's webhook takes, at the edges of TestMultiNodeRefusals'
	// refusals: a percentage of maxUnavailable that rounds down to 1 group,
	// one of maxSurge that rounds up to 1, nothing to roll at replicas 0,
	// and 2^31−1 pods.
	for name, xr := range map[string]map[string]any{
		"MaxUnavailable34Percent": mnXR("replicas", 3, "rollingUpdate", map[string]any{"maxUnavailable": "34%"}),
		"MaxSurge1Percent":        mnXR("replicas", 3, "rollingUpdate", map[string]any{"maxUnavailable": "10%", "maxSurge": "1%"}),
		"NoReplicas":              mnXR("replicas", 0, "rollingUpdate", map[string]any{"maxUnavailable": 0}),
		"MostPods":                mnXR("replicas", 1<<30-1, "multiNode.podsPerReplica", 2),
		"MostPodsOdd":             mnXR("replicas", 715827882, "multiNode", map[string]any{"podsPerReplica": 3}, "resources.gpu", "1", "vllmConfig.tensorParallelSize", 1, "vllmConfig.pipelineParallelSize", 3),
	} {
		if got := refusal(t, xr); got != "" {
			t.Errorf("%s: refused: %s", name, got)
		}
	}
}

// TestMultiNodeNetworkPolicy: with the policy on, it covers the workers too,
// and a group's pods reach each other on every port.
func TestMultiNodeNetworkPolicy(t *testing.T) {
	np := desired(t, mustRun(t, req(t, mnXR("networkPolicy", map[string]any{}), nil, nil)), "engines-networkpolicy", &networkingv1.NetworkPolicy{})
	pods := metav1.LabelSelector{
		MatchLabels:      map[string]string{"app.kubernetes.io/instance": "s"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app.kubernetes.io/component", Operator: metav1.LabelSelectorOpIn, Values: []string{"serving-engine", "serving-engine-worker"}}},
	}
	if diff := cmp.Diff(pods, np.Spec.PodSelector); diff != "" {
		t.Errorf("podSelector (-want +got):\n%s", diff)
	}
	if len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[1].Ports) != 0 || !cmp.Equal(&pods, np.Spec.Ingress[1].From[0].PodSelector) {
		t.Errorf("ingress %+v: want the router's rule, then every port from the stack's engine pods", np.Spec.Ingress)
	}
}

// TestMultiNodeRefusals: the arithmetic, the release, and what does not go
// with multiNode yet, each naming the field.
func TestMultiNodeRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"Arithmetic": {xr: mnXR("vllmConfig.pipelineParallelSize", 1),
			want: "spec.multiNode: resources.gpu 2 × podsPerReplica 2 = 4 GPUs per replica, and vllmConfig.tensorParallelSize 2 × pipelineParallelSize 1 = 2 ranks: each GPU of a replica runs one rank; make the two products equal, e.g. tensorParallelSize 2 and pipelineParallelSize 2"},
		// Without GPUs the suggestion is a GPU count that works.
		"NoGPUs": {xr: mnXR("resources.gpu", "0"),
			want: "spec.multiNode: resources.gpu 0 × podsPerReplica 2 = 0 GPUs per replica, and vllmConfig.tensorParallelSize 2 × pipelineParallelSize 2 = 4 ranks: each GPU of a replica runs one rank; set resources.gpu to 2, the GPUs of each pod"},
		"NoGPUsUneven": {xr: mnXR("resources.gpu", nil, "vllmConfig.pipelineParallelSize", 1, "multiNode.podsPerReplica", 3),
			want: "spec.multiNode: resources.gpu 0 × podsPerReplica 3 = 0 GPUs per replica, and vllmConfig.tensorParallelSize 2 × pipelineParallelSize 1 = 2 ranks: each GPU of a replica runs one rank; set resources.gpu to 2 and pipelineParallelSize to 3, one stage per pod"},
		"RayNeedsVLLMImage": {xr: mnXR("vllmConfig.image", "myorg/vllm:0.11", "vllmConfig.engineVersion", "0.11.0"),
			want: "spec.multiNode: vLLM 0.11.0 (vllmConfig.engineVersion 0.11.0) has no multi-node backend of its own (its flags came with 0.12.0), so the group runs Ray with the script vLLM's own images carry (/vllm-workspace/examples/online_serving/multi-node-serving.sh), and the engine's image is docker.io/myorg/vllm:0.11: use vllm/vllm-openai:v0.11.0, or vLLM 0.12.0 or later"},
		"ReadWriteOnce": {xr: mnXR("storage.accessModes", []any{"ReadWriteOnce"}),
			want: "spec.multiNode: storage is ReadWriteOnce, and a replica's pods run on different nodes, which cannot all mount it: use accessModes [ReadWriteMany], an existing claim every node can mount, or storage.enabled false"},
		"Recreate": {xr: mnXR("deploymentStrategy", "Recreate"),
			want: "spec.multiNode: deploymentStrategy Recreate: a LeaderWorkerSet only rolls groups over (rollingUpdate: maxUnavailable, maxSurge); remove deploymentStrategy"},
		"Disaggregation": {xr: mnXR("routerConfig.image", "lmcache/lmstack-router:v0.1.12", "disaggregation", map[string]any{}),
			want: "spec.multiNode: disaggregation cannot be combined with multiNode yet: a disaggregated group on several nodes needs a NIXL side channel per rank (DISAGG-MULTINODE.md, open question 3)"},
		"PDB": {xr: mnXR("podDisruptionBudget", map[string]any{"maxUnavailable": 1}),
			want: "spec.multiNode: podDisruptionBudget cannot be combined with multiNode yet: it would count pods, and evicting any pod of a group restarts the whole group"},
		// The XRD requires podsPerReplica, and the function checks the
		// XRD's required fields (validate/schema.go).
		"NoPodsPerReplica": {xr: with("multiNode", map[string]any{}),
			want: "spec.multiNode.podsPerReplica is required: set it, or remove spec.multiNode"},
		// LWS v0.7.0's webhook: maxUnavailable scaled against replicas
		// rounding down, maxSurge rounding up, not both 0; at most 2^31−1
		// pods.
		"MaxUnavailable0Alone": {xr: mnXR("rollingUpdate", map[string]any{"maxUnavailable": 0}),
			want: "spec.rollingUpdate: maxUnavailable 0 and maxSurge unset, which is 0 on a LeaderWorkerSet (1 on a Deployment): a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set maxUnavailable to 1, or maxSurge to 1 (a surge group needs a whole group's GPUs more)"},
		"MaxUnavailablePercentRoundsDown": {xr: mnXR("replicas", 3, "rollingUpdate", map[string]any{"maxUnavailable": "10%"}),
			want: `spec.rollingUpdate: maxUnavailable "10%" of replicas 3 is 0 groups (rounded down) and maxSurge unset, which is 0 on a LeaderWorkerSet (1 on a Deployment): a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set maxUnavailable to 1 (or "34%"), or maxSurge to 1 (a surge group needs a whole group's GPUs more)`},
		"MaxSurgeZeroPercent": {xr: mnXR("replicas", 3, "rollingUpdate", map[string]any{"maxUnavailable": "33%", "maxSurge": "0%"}),
			want: `spec.rollingUpdate: maxUnavailable "33%" of replicas 3 is 0 groups (rounded down) and maxSurge "0%": a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set maxUnavailable to 1 (or "34%"), or maxSurge to 1 (a surge group needs a whole group's GPUs more)`},
		"MaxSurgeZero": {xr: mnXR("replicas", 200, "rollingUpdate", map[string]any{"maxUnavailable": "0%", "maxSurge": 0}),
			want: `spec.rollingUpdate: maxSurge and maxUnavailable cannot both be 0: a rollout could never make progress`},
		"Models": {xr: mnXR("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "org/a", "replicas": 4, "rollingUpdate": map[string]any{"maxUnavailable": "20%"}}}),
			want: `spec.models[0].rollingUpdate: maxUnavailable "20%" of replicas 4 is 0 groups (rounded down) and maxSurge unset, which is 0 on a LeaderWorkerSet (1 on a Deployment): a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set maxUnavailable to 1 (or "25%"), or maxSurge to 1 (a surge group needs a whole group's GPUs more)`},
		"PodsOverflow": {xr: mnXR("replicas", 1<<30),
			want: "spec.replicas 1073741824 × multiNode.podsPerReplica 2 = 2147483648 pods, and a LeaderWorkerSet takes at most 2147483647 (its webhook refuses more): lower replicas to at most 1073741823"},
		"PipelineInOnePod": {xr: with("vllmConfig.tensorParallelSize", 2, "vllmConfig.pipelineParallelSize", 2, "resources.gpu", "2"),
			want: `spec: vllmConfig.tensorParallelSize 2 × pipelineParallelSize 2 needs 4 GPUs but resources.gpu is "2": raise resources.gpu, lower the two, or spread each replica over nodes with multiNode`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
}

// TestMultiNodeRay: before vLLM 0.12.0 a group runs Ray, as vLLM's LWS guide
// did: the leader starts the Ray head for the group's size and then runs
// `vllm serve` with the Ray backend, whose arguments reach it as they are;
// a worker joins the leader's Ray head.
func TestMultiNodeRay(t *testing.T) {
	rsp := mustRun(t, req(t, mnXR("vllmConfig.image", "vllm/vllm-openai:v0.11.0", "vllmConfig.extraArgs", []any{"--seed=1"}), nil, nil))
	l := desired(t, rsp, "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	leader, worker := l.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0], l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	wantLeader := []string{"sh", "-c", `bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size="$LWS_GROUP_SIZE" && exec "$0" "$@"`}
	if diff := cmp.Diff(wantLeader, leader.Command); diff != "" {
		t.Errorf("leader command (-want +got):\n%s", diff)
	}
	wantArgs := []string{"vllm", "serve", "org/m", "--host", "0.0.0.0", "--port", "8000", "--tensor-parallel-size=2", "--pipeline-parallel-size=2", "--distributed-executor-backend", "ray", "--seed=1"}
	if diff := cmp.Diff(wantArgs, leader.Args); diff != "" {
		t.Errorf("leader args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bash", "/vllm-workspace/examples/online_serving/multi-node-serving.sh", "worker", "--ray_address=$(LWS_LEADER_ADDRESS)"}, worker.Command); diff != "" || worker.Args != nil {
		t.Errorf("worker command (-want +got):\n%s; args %q", diff, worker.Args)
	}
}
