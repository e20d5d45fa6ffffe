package stack

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// pdXR is minimalXR disaggregated, on releases that can: vLLM 0.12.0 and
// router 0.1.12.
func pdXR(kv ...any) map[string]any {
	xr := with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"disaggregation", map[string]any{}}, kv...)...)
	return xr
}

// TestDisaggregatedEngines: a disaggregated model is two groups of engines,
// named and labelled apart, the same model under the same name, each with
// its role in the KV transfer and its own settings over the model's.
func TestDisaggregatedEngines(t *testing.T) {
	rsp := reconciled(t, pdXR("disaggregation", map[string]any{
		"ucxTLS":  "cuda_ipc,cuda_copy,tcp",
		"prefill": map[string]any{"replicas": 2, "extraArgs": []any{"--max-num-batched-tokens=8192"}},
		"decode": map[string]any{"tensorParallelSize": 2, "resources": map[string]any{"gpu": "2"},
			"nodeSelector": map[string]any{"gpu": "h100"}},
	}, "vllmConfig.extraArgs", []any{"--seed=1"}), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	want := []string{"engine-m-prefill", "engine-m-prefill-service", "engine-m-prefill-storage", "engine-m-decode", "engine-m-decode-service", "engine-m-decode-storage",
		"router-serviceaccount", "router-role", "router-rolebinding", "router", "router-service"}
	if diff := cmp.Diff(want, keys(rsp)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	sideChannel := []corev1.EnvVar{
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: podIPEnv.ValueFrom},
		{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: "5600"},
		{Name: "UCX_TLS", Value: "cuda_ipc,cuda_copy,tcp"},
	}
	for _, tc := range []struct {
		key, name, label string
		replicas         int32
		args             []string
		gpu              string
		nodeSelector     map[string]string
	}{
		{"engine-m-prefill", "s-m-prefill-deployment-vllm", "m-prefill", 2,
			args("--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, "--seed=1", "--max-num-batched-tokens=8192"), "1", nil},
		{"engine-m-decode", "s-m-decode-deployment-vllm", "m-decode", 1,
			args("--tensor-parallel-size=2", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`, "--seed=1"), "2", map[string]string{"gpu": "h100"}},
	} {
		d := desired(t, rsp, tc.key, &appsv1.Deployment{})
		c := d.Spec.Template.Spec.Containers[0]
		if d.Name != tc.name || d.Spec.Template.Labels["model"] != tc.label || *d.Spec.Replicas != tc.replicas {
			t.Errorf("%s: name %s, model label %s, replicas %d; want %s, %s, %d", tc.key, d.Name, d.Spec.Template.Labels["model"], *d.Spec.Replicas, tc.name, tc.label, tc.replicas)
		}
		if diff := cmp.Diff(tc.args, c.Args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tc.key, diff)
		}
		if diff := cmp.Diff(withPodIP(append([]corev1.EnvVar{{Name: "HF_HOME", Value: "/data"}}, sideChannel...)...), c.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", tc.key, diff)
		}
		if got := c.Resources.Limits.Name("nvidia.com/gpu", "").String(); got != tc.gpu {
			t.Errorf("%s: %s GPUs, want %s", tc.key, got, tc.gpu)
		}
		if diff := cmp.Diff(tc.nodeSelector, d.Spec.Template.Spec.NodeSelector); diff != "" {
			t.Errorf("%s nodeSelector (-want +got):\n%s", tc.key, diff)
		}
		wantPorts := []corev1.ContainerPort{{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}, {Name: "nixl", ContainerPort: 5600, Protocol: corev1.ProtocolTCP}}
		if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
			t.Errorf("%s ports (-want +got):\n%s", tc.key, diff)
		}
	}
	router := engineContainer0(t, rsp, "router")
	for _, a := range []string{"--routing-logic=disaggregated_prefill_orchestrated", "--prefill-model-labels=m-prefill", "--decode-model-labels=m-decode"} {
		if !slices.Contains(router.Args, a) {
			t.Errorf("router args %q lack %s", router.Args, a)
		}
	}
}

// TestNIXLListenersPerRank: up to vLLM 0.11.0 the side channel listens on
// one port per tensor parallel rank.
func TestNIXLListenersPerRank(t *testing.T) {
	for ver, want := range map[string][]int32{"0.11.0": {8000, 5600, 5601}, "0.11.1": {8000, 5600}} {
		xr := pdXR("vllmConfig.engineVersion", ver, "vllmConfig.image", "vllm/vllm-openai:latest",
			"vllmConfig.tensorParallelSize", 2, "resources.gpu", "2")
		var got []int32
		for _, p := range engineContainer0(t, mustRun(t, req(t, xr, nil, nil)), "engine-m-prefill").Ports {
			got = append(got, p.ContainerPort)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("vLLM %s: ports (-want +got):\n%s", ver, diff)
		}
	}
}

// TestDisaggregationRefusals: what the programs could not serve as asked is
// refused, naming the field and the release.
func TestDisaggregationRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"OldVLLM": {xr: pdXR("vllmConfig.image", "vllm/vllm-openai:v0.10.1"),
			want: "spec.disaggregation.transfer nixl needs vLLM 0.10.2 or later, the first vllm/vllm-openai image with NIXL, and the engine runs vLLM 0.10.1 (vllmConfig.image docker.io/vllm/vllm-openai:v0.10.1): use a newer image"},
		"OldRouter": {xr: pdXR("routerConfig.image", "lmcache/lmstack-router:v0.1.10"),
			want: "spec.disaggregation needs router 0.1.11 or later, the first with --routing-logic disaggregated_prefill_orchestrated, and the router is 0.1.10 (routerConfig.image lmcache/lmstack-router:v0.1.10): use a newer router image"},
		"RouterType": {xr: pdXR("routerConfig.routerType", "session"),
			want: "spec.routerConfig.routerType session cannot route a disaggregated model: remove routerType, the router then uses disaggregated_prefill_orchestrated"},
		"ServiceName": {xr: pdXR("routerConfig.k8sServiceDiscoveryType", "service-name"),
			want: "spec.routerConfig.k8sServiceDiscoveryType service-name cannot route a disaggregated model: the decode engine pulls the KV cache from the host the router names, which must be the prefill pod, not its Service; use pod-ip"},
		"LMCache": {xr: pdXR("lmcacheConfig.enabled", true),
			want: "spec.disaggregation: lmcacheConfig.enabled and disaggregation both set the engines' --kv-transfer-config: turn LMCache off for a disaggregated model"},
		"Autoscaling": {xr: pdXR("autoscaling", map[string]any{"maxReplicas": 4, "prometheusAddress": "http://p:9090"}),
			want: "spec.disaggregation: autoscaling scales one Deployment per model and a disaggregated model has two: turn autoscaling off and set each group's replicas"},
		"GroupTensorParallel": {xr: pdXR("disaggregation", map[string]any{"decode": map[string]any{"tensorParallelSize": 2}}),
			want: `spec.disaggregation.decode: tensorParallelSize 2 needs 2 GPUs but the group's resources.gpu is "1": raise resources.gpu or lower tensorParallelSize`},
		"OtherModels": {xr: with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12", "models", []any{
			map[string]any{"name": "a", "modelURL": "org/a", "disaggregation": map[string]any{}},
			map[string]any{"name": "b", "modelURL": "org/b"},
		}), want: "spec.models[0].disaggregation: a stack with a disaggregated model serves that model alone: the router's routing logic (disaggregated_prefill_orchestrated) applies to every model; serve the other models from stacks of their own"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
}

// TestDisaggregationOff: enabled false serves the model as one group.
func TestDisaggregationOff(t *testing.T) {
	rsp := mustRun(t, req(t, pdXR("disaggregation", map[string]any{"enabled": false, "prefill": map[string]any{"replicas": 3}}), nil, nil))
	if diff := cmp.Diff(keys(mustRun(t, req(t, minimalXR(), nil, nil))), keys(rsp)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestDisaggregatedExample: example/stacks/disaggregated.yaml composes
// without a warning.
func TestDisaggregatedExample(t *testing.T) {
	rsp := mustRun(t, req(t, stacktest.LoadXR(t, "../example/stacks/disaggregated.yaml", ""), nil, nil))
	if len(rsp.warnings) > 0 {
		t.Errorf("warnings: %q", rsp.warnings)
	}
}

// TestDisaggregationTakesDefaultRouterType: the API server writes the XRD's
// default routerType, roundrobin, into every stack that sets none; a
// disaggregated stack then routes as it must.
func TestDisaggregationTakesDefaultRouterType(t *testing.T) {
	router := engineContainer0(t, mustRun(t, req(t, pdXR("routerConfig.routerType", "roundrobin"), nil, nil)), "router")
	if !slices.Contains(router.Args, "--routing-logic=disaggregated_prefill_orchestrated") {
		t.Errorf("router args %q", router.Args)
	}
}

// TestDisaggregatedNetworkPolicy: with the engines' NetworkPolicy on, the
// decode engines still reach the prefill pods, on every port (the NIXL side
// channel, then UCX's transports, whose TCP ports are not fixed).
func TestDisaggregatedNetworkPolicy(t *testing.T) {
	np := desired(t, mustRun(t, req(t, pdXR("networkPolicy", map[string]any{}), nil, nil)), "engines-networkpolicy", &networkingv1.NetworkPolicy{})
	want := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine"}},
	}}}
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress rules %+v, want the router's and the engines'", np.Spec.Ingress)
	}
	if diff := cmp.Diff(want, np.Spec.Ingress[1]); diff != "" {
		t.Errorf("engines' rule (-want +got):\n%s", diff)
	}
}
