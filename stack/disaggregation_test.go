package stack

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
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
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: build.PodIPEnv.ValueFrom},
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
			oldArgs("--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, "--seed=1", "--max-num-batched-tokens=8192"), "1", nil},
		{"engine-m-decode", "s-m-decode-deployment-vllm", "m-decode", 1,
			oldArgs("--tensor-parallel-size=2", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`, "--seed=1"), "2", map[string]string{"gpu": "h100"}},
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
			want: "spec.disaggregation: lmcacheConfig.enabled and disaggregation both set the engines' --kv-transfer-config: turn LMCache off for a disaggregated model (transfer lmcache configures the LMCache it needs)"},
		"Autoscaling": {xr: pdXR("autoscaling", map[string]any{"maxReplicas": 4, "prometheusAddress": "http://p:9090"}),
			want: "spec.autoscaling scales one Deployment per model and a disaggregated model has two: move it to spec.disaggregation.prefill.autoscaling and spec.disaggregation.decode.autoscaling, each group on its own signal, or set each group's replicas"},
		// Both fixes of kvaware's own check (LMCache, prefixaware) are
		// refused for a disaggregated model: only what works is said.
		"KVAware": {xr: pdXR("routerConfig.routerType", "kvaware"),
			want: "spec.routerConfig.routerType kvaware cannot route a disaggregated model: remove routerType, the router then uses disaggregated_prefill_orchestrated"},
		"GroupTensorParallel": {xr: pdXR("disaggregation", map[string]any{"decode": map[string]any{"tensorParallelSize": 2}}),
			want: `spec.disaggregation.decode: tensorParallelSize 2 needs 2 GPUs but spec.resources.gpu is "1": raise spec.resources.gpu or lower tensorParallelSize`},
		"HostIPCSysctl": {xr: pdXR("disaggregation.hostPIDAndIPC", true, "pod", map[string]any{"securityContext": map[string]any{"sysctls": []any{
			map[string]any{"name": "net.core.somaxconn", "value": "1024"}, map[string]any{"name": "kernel/shm_rmid_forced", "value": "1"}}}}),
			want: `spec.pod.securityContext.sysctls[1].name "kernel/shm_rmid_forced" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`},
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

// pdLMCacheXR is pdXR with transfer lmcache on the chart's tutorial image.
func pdLMCacheXR(kv ...any) map[string]any {
	return pdXR(append([]any{"vllmConfig.image", "lmcache/vllm-openai:2025-05-27-v1",
		"disaggregation", map[string]any{"transfer": "lmcache", "ucxTLS": "cuda_ipc,cuda_copy,tcp"}}, kv...)...)
}

// TestLMCacheTransferEngines: transfer lmcache is the chart's recipe:
// LMCacheConnectorV1 as producer and consumer, LMCache's mid-2025 NIXL
// names with the prefill engine sending to the decode Service's receiver
// port, which only the decode engine and its Service declare, behind the
// router's disaggregated_prefill logic.
func TestLMCacheTransferEngines(t *testing.T) {
	rsp := reconciled(t, pdLMCacheXR(), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	if len(rsp.warnings) > 0 {
		t.Errorf("warnings: %q", rsp.warnings)
	}
	lmcacheEnv := func(role, receiver string) []corev1.EnvVar {
		return withPodIP(env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO",
			"LMCACHE_LOCAL_CPU", "False", "LMCACHE_MAX_LOCAL_CPU_SIZE", "0", "LMCACHE_ENABLE_NIXL", "True",
			"LMCACHE_NIXL_ROLE", role, "LMCACHE_NIXL_RECEIVER_HOST", receiver, "LMCACHE_NIXL_RECEIVER_PORT", "55555",
			"LMCACHE_NIXL_BUFFER_SIZE", "1073741824", "LMCACHE_NIXL_BUFFER_DEVICE", "cuda", "LMCACHE_NIXL_ENABLE_GC", "True",
			"UCX_TLS", "cuda_ipc,cuda_copy,tcp")...)
	}
	api := corev1.ContainerPort{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}
	for _, tc := range []struct {
		key   string
		args  []string
		env   []corev1.EnvVar
		ports []corev1.ContainerPort
	}{
		{"engine-m-prefill",
			args("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_producer","kv_connector_extra_config":{"discard_partial_chunks":false,"lmcache_rpc_port":"sender"}}`),
			lmcacheEnv("sender", "s-m-decode-engine-service"), []corev1.ContainerPort{api}},
		{"engine-m-decode",
			args("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_consumer","kv_connector_extra_config":{"discard_partial_chunks":false,"lmcache_rpc_port":"receiver"}}`),
			lmcacheEnv("receiver", "0.0.0.0"), []corev1.ContainerPort{api, {Name: "zmq-port", ContainerPort: 55555, Protocol: corev1.ProtocolTCP}}},
	} {
		c := engineContainer0(t, rsp, tc.key)
		if diff := cmp.Diff(tc.args, c.Args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tc.key, diff)
		}
		if diff := cmp.Diff(tc.env, c.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", tc.key, diff)
		}
		if diff := cmp.Diff(tc.ports, c.Ports); diff != "" {
			t.Errorf("%s ports (-want +got):\n%s", tc.key, diff)
		}
	}
	// The sender's receiver host is the decode Service, which forwards the
	// receiver port; the prefill Service has only the API port.
	decode := desired(t, rsp, "engine-m-decode-service", &corev1.Service{})
	if decode.Name != "s-m-decode-engine-service" {
		t.Errorf("decode Service %s, the prefill engines send to s-m-decode-engine-service", decode.Name)
	}
	for key, want := range map[string][]string{"engine-m-prefill-service": {"service-port:80->8000"}, "engine-m-decode-service": {"service-port:80->8000", "zmq-port:55555->zmq-port"}} {
		var got []string
		for _, p := range desired(t, rsp, key, &corev1.Service{}).Spec.Ports {
			got = append(got, p.Name+":"+strconv.Itoa(int(p.Port))+"->"+p.TargetPort.String())
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s ports (-want +got):\n%s", key, diff)
		}
	}
	router := engineContainer0(t, rsp, "router")
	for _, a := range []string{"--routing-logic=disaggregated_prefill", "--prefill-model-labels=m-prefill", "--decode-model-labels=m-decode"} {
		if !slices.Contains(router.Args, a) {
			t.Errorf("router args %q lack %s", router.Args, a)
		}
	}
}

// TestLMCacheTransferImages: the build date of an lmcache/vllm-openai tag
// decides; the window's edges are in, the days outside out, and an image
// that tells no date is refused.
func TestLMCacheTransferImages(t *testing.T) {
	const outside = "invalid ProductionStack: spec.disaggregation.transfer lmcache needs the NIXL backend of mid-2025 LMCache, in images built from 2025-05-27 to 2025-09-11, and the engine's image %s was built %s: LMCache#1579 (2025-09-12) replaced it with a backend that waits for a request field no router release sends; use lmcache/vllm-openai:2025-05-27-v1 (the chart's), or transfer nixl"
	const undated = "invalid ProductionStack: spec.disaggregation.transfer lmcache needs the NIXL backend of mid-2025 LMCache, which the function can only tell from an lmcache/vllm-openai image tagged with its build date, and the engine's image is %s: use lmcache/vllm-openai:2025-05-27-v1 (the chart's), or transfer nixl"
	for image, want := range map[string]string{
		"lmcache/vllm-openai:2025-05-27":                "",
		"lmcache/vllm-openai:2025-09-11-v2":             "",
		"registry.local/lmcache/vllm-openai:2025-07-01": "",
		"lmcache/vllm-openai:2025-05-26-v1":             fmt.Sprintf(outside, "docker.io/lmcache/vllm-openai:2025-05-26-v1", "2025-05-26"),
		"lmcache/vllm-openai:2025-09-12":                fmt.Sprintf(outside, "docker.io/lmcache/vllm-openai:2025-09-12", "2025-09-12"),
		"lmcache/vllm-openai:latest":                    fmt.Sprintf(undated, "docker.io/lmcache/vllm-openai:latest"),
		"lmcache/vllm-openai:20250527":                  fmt.Sprintf(undated, "docker.io/lmcache/vllm-openai:20250527"),
		"vllm/vllm-openai:v0.10.1":                      fmt.Sprintf(undated, "docker.io/vllm/vllm-openai:v0.10.1"),
		"example.com/vllm-openai:2025-06-01":            fmt.Sprintf(undated, "example.com/vllm-openai:2025-06-01"),
	} {
		if got := refusal(t, pdLMCacheXR("vllmConfig.image", image)); got != want {
			t.Errorf("%s: refusal\n got: %s\nwant: %s", image, got, want)
		}
	}
}

// TestLMCacheTransferRefusals: one receiver port per engine, one decode
// engine, and a router that keeps a client per group.
func TestLMCacheTransferRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"TensorParallel": {xr: pdLMCacheXR("disaggregation.prefill", map[string]any{"tensorParallelSize": 2, "resources": map[string]any{"gpu": "2"}}),
			want: "spec.disaggregation.prefill: transfer lmcache takes one receiver port per engine, and tensorParallelSize 2 runs 2 workers that each need one (how LMCache spread ranks over ports changed in July 2025, LMCache#1039, and an image does not say which it has): use tensorParallelSize 1 or transfer nixl"},
		"DecodeReplicas": {xr: pdLMCacheXR("disaggregation.decode", map[string]any{"replicas": 2}),
			want: "spec.disaggregation.decode.replicas 2: with transfer lmcache the prefill engine pushes the KV cache to the decode Service, which picks any decode pod, while the router decodes on one of them: use one decode engine, or transfer nixl, where the router names the prefill pod to every decode engine"},
		"OldRouter": {xr: pdLMCacheXR("routerConfig.image", "lmcache/lmstack-router:v0.1.3"),
			want: "spec.disaggregation.transfer lmcache needs router 0.1.4 or later, the first that keeps a client per group for --routing-logic disaggregated_prefill, and the router is 0.1.3 (routerConfig.image lmcache/lmstack-router:v0.1.3): use a newer router image"},
		"OldVLLM": {xr: pdLMCacheXR("vllmConfig.engineVersion", "0.8.4"),
			want: "spec.disaggregation.transfer lmcache needs vLLM 0.8.5 or later (LMCacheConnectorV1), and the engine runs vLLM 0.8.4 (vllmConfig.engineVersion 0.8.4): remove engineVersion or declare the vLLM the image runs"},
		"RouterType": {xr: pdLMCacheXR("routerConfig.routerType", "session", "routerConfig.sessionKey", "x-user"),
			want: "spec.routerConfig.routerType session cannot route a disaggregated model: remove routerType, the router then uses disaggregated_prefill"},
		"ServiceName": {xr: pdLMCacheXR("routerConfig.k8sServiceDiscoveryType", "service-name"),
			want: "spec.routerConfig.k8sServiceDiscoveryType service-name cannot route a disaggregated model: the router tells the groups apart by the label model, which it reads from a Service's selector there, and the stack's Services select pods by their name labels; use pod-ip"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
	// A router 0.1.4 and one prefill engine are enough; more prefill
	// engines are a warning: the router uses one.
	rsp := mustRun(t, req(t, pdLMCacheXR("routerConfig.image", "lmcache/lmstack-router:v0.1.4", "disaggregation.prefill", map[string]any{"replicas": 3}), nil, nil))
	want := []string{"spec.disaggregation.prefill: storage is ReadWriteOnce but replicas is 3: replicas scheduled on other nodes cannot mount the model cache; use accessModes [ReadWriteMany] or one replica",
		"spec.disaggregation.prefill.replicas 3: the router's disaggregated_prefill logic sends every prompt to one prefill engine (the last it discovered), so the others stay idle: use one prefill engine, or transfer nixl, which spreads prompts over all",
		"spec.shutdown: router 0.1.4 (routerConfig.image lmcache/lmstack-router:v0.1.4) keeps sending requests to an engine pod that is being deleted until it exits (router 0.1.7 and later drop it at once), so requests that reach a draining engine fail: use a router image of 0.1.7 or later"}
	if diff := cmp.Diff(want, rsp.warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestHostNamespaces: the groups' pods join the node's PID and IPC
// namespaces only when the stack asks, and then both groups do.
func TestHostNamespaces(t *testing.T) {
	for _, on := range []bool{false, true} {
		xr := pdXR()
		if on {
			xr = pdXR("disaggregation.hostPIDAndIPC", true)
		}
		rsp := mustRun(t, req(t, xr, nil, nil))
		for _, key := range []string{"engine-m-prefill", "engine-m-decode"} {
			pod := desired(t, rsp, key, &appsv1.Deployment{}).Spec.Template.Spec
			if pod.HostPID != on || pod.HostIPC != on {
				t.Errorf("hostPIDAndIPC %v: %s has hostPID %v, hostIPC %v", on, key, pod.HostPID, pod.HostIPC)
			}
		}
	}
	// A model that is not disaggregated has no such setting to take.
	pod := desired(t, mustRun(t, req(t, pdXR("disaggregation", map[string]any{"enabled": false, "hostPIDAndIPC": true}), nil, nil)), "engine-m", &appsv1.Deployment{}).Spec.Template.Spec
	if pod.HostPID || pod.HostIPC {
		t.Errorf("disaggregation off: hostPID %v, hostIPC %v", pod.HostPID, pod.HostIPC)
	}
}

// TestDisaggregatedSharedClaim: with ReadWriteMany storage both groups mount
// the model's own claim (S-M-storage-claim, key engine-M-storage), so
// turning disaggregation on or off keeps the weights; with ReadWriteOnce
// each group has its own.
func TestDisaggregatedSharedClaim(t *testing.T) {
	for _, tc := range []struct {
		modes  []any
		claims map[string]string // key: claim name, as the groups mount it
		mounts []string
	}{
		{[]any{"ReadWriteMany"}, map[string]string{"engine-m-storage": "s-m-storage-claim"}, []string{"s-m-storage-claim", "s-m-storage-claim"}},
		{[]any{"ReadWriteOnce"}, map[string]string{"engine-m-prefill-storage": "s-m-prefill-storage-claim", "engine-m-decode-storage": "s-m-decode-storage-claim"},
			[]string{"s-m-prefill-storage-claim", "s-m-decode-storage-claim"}},
	} {
		rsp := mustRun(t, req(t, pdXR("storage.accessModes", tc.modes), nil, nil))
		claims := map[string]string{}
		for _, k := range rsp.keys {
			if c, ok := rsp.objects[k].(*corev1.PersistentVolumeClaim); ok {
				claims[k] = c.Name
				if tc.modes[0] == "ReadWriteMany" && (c.Labels[names.LabelName] != "m" || c.Labels[names.LabelModel] != "m") {
					t.Errorf("%v: shared claim labels %v, want the model's", tc.modes, c.Labels)
				}
			}
		}
		if diff := cmp.Diff(tc.claims, claims); diff != "" {
			t.Errorf("%v: claims (-want +got):\n%s", tc.modes, diff)
		}
		var mounts []string
		for _, k := range []string{"engine-m-prefill", "engine-m-decode"} {
			for _, v := range rsp.objects[k].(*appsv1.Deployment).Spec.Template.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					mounts = append(mounts, v.PersistentVolumeClaim.ClaimName)
				}
			}
		}
		if diff := cmp.Diff(tc.mounts, mounts); diff != "" {
			t.Errorf("%v: claims the groups mount (-want +got):\n%s", tc.modes, diff)
		}
	}
}
