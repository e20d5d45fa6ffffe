package stack

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// dpXR is minimalXR with four data-parallel ranks of one GPU each on one pod,
// the experts spread over them, on vLLM ver.
func dpXR(ver string, kv ...any) map[string]any {
	return with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v" + ver, "vllmConfig.dataParallelSize", 4, "resources.gpu", "4",
		"vllmConfig.expertParallel", map[string]any{}}, kv...)...)
}

// wideEPXR is llm-d's wide-EP shape: two pods of eight GPUs, sixteen ranks
// with tensor parallel 1, experts spread, EPLB and DeepEP, on vLLM ver.
func wideEPXR(ver string, kv ...any) map[string]any {
	return with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v" + ver, "multiNode", map[string]any{"podsPerReplica": 2},
		"vllmConfig.dataParallelSize", 16, "resources.gpu", "8", "storage.accessModes", []any{"ReadWriteMany"},
		"vllmConfig.expertParallel", map[string]any{"eplb": map[string]any{"numRedundantExperts": 32, "windowSize": 1000}, "all2allBackend": "deepep_low_latency"}}, kv...)...)
}

// afterPort are the arguments of vllm serve after --host 0.0.0.0 --port 8000
// and the drain's --shutdown-timeout (TestDrain's), which follows it.
func afterPort(t *testing.T, args []string) []string {
	t.Helper()
	i := slices.Index(args, "--port")
	if i < 0 || i+2 > len(args) {
		t.Fatalf("no --port in %q", args)
	}
	rest := args[i+2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "--shutdown-timeout=") {
		rest = rest[1:]
	}
	return rest
}

// TestDataParallelOnePod: the ranks of one pod are --data-parallel-size, the
// experts --enable-expert-parallel, the all-to-all backend and EPLB spelled
// as each release takes them; the pod mounts /dev/shm.
func TestDataParallelOnePod(t *testing.T) {
	for _, tc := range []struct {
		ver  string
		ep   map[string]any
		args []string
		env  []corev1.EnvVar
	}{
		{"0.22.0", map[string]any{"eplb": map[string]any{"numRedundantExperts": 32, "logBalancedness": true}, "all2allBackend": "deepep_low_latency"},
			[]string{"--data-parallel-size=4", "--enable-expert-parallel", "--enable-eplb", `--eplb-config={"num_redundant_experts":32,"log_balancedness":true}`, "--all2all-backend=deepep_low_latency"}, nil},
		// The flag came with 0.11.1; 0.11.0 reads the variable.
		{"0.11.0", map[string]any{"all2allBackend": "allgather_reducescatter"},
			[]string{"--data-parallel-size=4", "--enable-expert-parallel"}, []corev1.EnvVar{{Name: "VLLM_ALL2ALL_BACKEND", Value: "allgather_reducescatter"}}},
		// Before --eplb-config (0.10.2), the settings were flags of their own.
		{"0.10.0", map[string]any{"eplb": map[string]any{"numRedundantExperts": 32, "windowSize": 500, "stepInterval": 100, "logBalancedness": true}, "all2allBackend": "deepep_high_throughput"},
			[]string{"--data-parallel-size=4", "--enable-expert-parallel", "--enable-eplb", "--num-redundant-experts=32", "--eplb-window-size=500", "--eplb-step-interval=100", "--eplb-log-balancedness"},
			[]corev1.EnvVar{{Name: "VLLM_ALL2ALL_BACKEND", Value: "deepep_high_throughput"}}},
		// EPLB without settings keeps vLLM's defaults.
		{"0.27.1", map[string]any{"eplb": map[string]any{}}, []string{"--data-parallel-size=4", "--enable-expert-parallel", "--enable-eplb"}, nil},
		// enabled: false turns the block off.
		{"0.27.1", map[string]any{"enabled": false}, []string{"--data-parallel-size=4"}, nil},
	} {
		rsp := reconciled(t, dpXR(tc.ver, "vllmConfig.expertParallel", tc.ep), nil)
		if rsp.refusal != "" {
			t.Fatalf("%s: %s", tc.ver, rsp.refusal)
		}
		c := engineContainer0(t, rsp, "engine-m")
		if diff := cmp.Diff(tc.args, afterPort(t, c.Args)); diff != "" {
			t.Errorf("vLLM %s args (-want +got):\n%s", tc.ver, diff)
		}
		var got []corev1.EnvVar
		for _, e := range c.Env {
			if e.Name == "VLLM_ALL2ALL_BACKEND" {
				got = append(got, e)
			}
		}
		if diff := cmp.Diff(tc.env, got); diff != "" {
			t.Errorf("vLLM %s env (-want +got):\n%s", tc.ver, diff)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/dev/shm" }) {
			t.Errorf("vLLM %s: no /dev/shm among %v", tc.ver, c.VolumeMounts)
		}
		if rsp.warnings != nil {
			t.Errorf("vLLM %s: warnings %q", tc.ver, rsp.warnings)
		}
	}
}

// TestDataParallelLoRA: from vLLM 0.16.0 the engine starts one API server
// per rank, and refuses more than one with runtime LoRA updating (on with
// enableLoRA): one API server is rendered there, not before.
func TestDataParallelLoRA(t *testing.T) {
	for ver, want := range map[string]bool{"0.13.0": false, "0.16.0": true, "0.27.1": true} {
		rsp := reconciled(t, dpXR(ver, "model.enableLoRA", true, "vllmConfig.expertParallel", nil), nil)
		if rsp.refusal != "" {
			t.Fatalf("%s: %s", ver, rsp.refusal)
		}
		args := engineContainer0(t, rsp, "engine-m").Args
		i := slices.Index(args, "--api-server-count")
		if got := i >= 0 && i+1 < len(args) && args[i+1] == "1"; got != want {
			t.Errorf("vLLM %s: --api-server-count 1 rendered %v, want %v (%q)", ver, got, want, args)
		}
	}
}

// TestDataParallelMultiNode: llm-d's wide-EP shape on a LeaderWorkerSet.
// Every pod runs its eight ranks; the leader's API server serves all
// sixteen (vLLM's internal load balancing, the one endpoint the router
// sees); a worker's first rank follows from its --node-rank, the LWS worker
// index, and the leader's address and handshake port come from LWS's
// variable and the rendered constant.
func TestDataParallelMultiNode(t *testing.T) {
	rsp := reconciled(t, wideEPXR("0.22.0"), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	l := desired(t, rsp, "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	// The leader binds the handshake at its own IP (libzmq binds no DNS
	// name); the workers reach it by its DNS name.
	dp := func(address string) []string {
		return []string{"--data-parallel-size=16", "--data-parallel-size-local=8", "--data-parallel-address", address, "--data-parallel-rpc-port", "29550",
			"--enable-expert-parallel", "--enable-eplb", `--eplb-config={"window_size":1000,"num_redundant_experts":32}`, "--all2all-backend=deepep_low_latency"}
	}
	leader := append([]string{"--nnodes=2", "--node-rank", "0", "--master-addr", "$(LWS_LEADER_ADDRESS)"}, dp("$(POD_IP)")...)
	worker := append([]string{"--nnodes=2", "--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--headless"}, dp("$(LWS_LEADER_ADDRESS)")...)
	for name, tc := range map[string]struct {
		tmpl corev1.PodTemplateSpec
		args []string
	}{"leader": {*l.Spec.LeaderWorkerTemplate.LeaderTemplate, leader}, "worker": {l.Spec.LeaderWorkerTemplate.WorkerTemplate, worker}} {
		c := tc.tmpl.Spec.Containers[0]
		if diff := cmp.Diff(tc.args, afterPort(t, c.Args)); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", name, diff)
		}
		// $(POD_IP) expands only after the variable is defined.
		if len(c.Env) == 0 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
			t.Errorf("%s: the first variable is not POD_IP from status.podIP: %v", name, c.Env)
		}
		if got := c.Resources.Limits.Name("nvidia.com/gpu", "").String(); got != "8" {
			t.Errorf("%s: %s GPUs, want 8", name, got)
		}
		// DeepEP between nodes registers memory it must lock.
		if sc := c.SecurityContext; sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"IPC_LOCK"}) {
			t.Errorf("%s: security context %v, want IPC_LOCK added", name, sc)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/dev/shm" }) {
			t.Errorf("%s: no /dev/shm among %v", name, c.VolumeMounts)
		}
	}
	// On one pod, or with another backend, nothing is added; the user's
	// own context is kept.
	for _, xr := range []map[string]any{
		dpXR("0.22.0", "vllmConfig.expertParallel", map[string]any{"all2allBackend": "deepep_low_latency"}),
		wideEPXR("0.22.0", "vllmConfig.expertParallel.all2allBackend", "allgather_reducescatter", "pod.containerSecurityContext", map[string]any{"runAsUser": 1000}),
	} {
		rsp := reconciled(t, xr, nil)
		if rsp.refusal != "" || len(rsp.keys) == 0 {
			t.Fatalf("refused: %s", rsp.refusal)
		}
		for _, k := range rsp.keys {
			if k != "engine-m" && k != "engine-m-leaderworkerset" {
				continue
			}
			var c corev1.Container
			if k == "engine-m" {
				c = engineContainer0(t, rsp, k)
			} else {
				c = desired(t, rsp, k, &lwsv1.LeaderWorkerSet{}).Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
			}
			if sc := c.SecurityContext; sc != nil && (sc.Capabilities != nil || (k == "engine-m-leaderworkerset" && (sc.RunAsUser == nil || *sc.RunAsUser != 1000))) {
				t.Errorf("%s: security context %+v", k, sc)
			}
		}
	}
}

// TestDataParallelRefusals: every inconsistent combination is refused with
// its arithmetic and the fix.
func TestDataParallelRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"OnePodGPUs": {xr: dpXR("0.22.0", "resources.gpu", "2"),
			want: "spec.vllmConfig.dataParallelSize: dataParallelSize 4 × tensorParallelSize 1 × pipelineParallelSize 1 = 4 GPUs, and spec.resources.gpu is 2: each data-parallel rank runs on tensorParallelSize × pipelineParallelSize GPUs of the pod; set spec.resources.gpu to 4, or dataParallelSize to 2"},
		"OnePodLocal": {xr: dpXR("0.22.0", "vllmConfig.dataParallelSizeLocal", 2),
			want: "spec.vllmConfig.dataParallelSizeLocal 2: on one pod every rank is local, dataParallelSize 4; set it to 4 or leave it out"},
		"NotDivisibleByPods": {xr: wideEPXR("0.22.0", "multiNode.podsPerReplica", 3),
			want: "spec.vllmConfig.dataParallelSize 16 is not divisible by spec.multiNode.podsPerReplica 3: each pod of a replica runs dataParallelSize / podsPerReplica whole ranks; set dataParallelSize to a multiple of 3, e.g. 18"},
		"GroupGPUs": {xr: wideEPXR("0.22.0", "vllmConfig.tensorParallelSize", 2),
			want: "spec.multiNode: resources.gpu 8 × podsPerReplica 2 = 16 GPUs per replica, and dataParallelSize 16 × tensorParallelSize 2 × pipelineParallelSize 1 = 32: each pod runs 8 ranks of 2 GPUs; set spec.resources.gpu to 16"},
		"GroupLocal": {xr: wideEPXR("0.22.0", "vllmConfig.dataParallelSizeLocal", 4),
			want: "spec.vllmConfig.dataParallelSizeLocal 4: dataParallelSize 16 / multiNode.podsPerReplica 2 = 8 ranks on each pod; set it to 8 or leave it out"},
		"ExpertsOnOneGPU": {xr: with("vllmConfig.expertParallel", map[string]any{}),
			want: "spec.vllmConfig.expertParallel: expert parallelism spreads the experts over dataParallelSize × tensorParallelSize GPUs, and 1 × 1 = 1: set spec.vllmConfig.dataParallelSize (or vllmConfig.tensorParallelSize) above 1, or remove expertParallel"},
		"EPLBWithoutExperts": {xr: dpXR("0.22.0", "vllmConfig.expertParallel", map[string]any{"enabled": false, "eplb": map[string]any{}}),
			want: "spec.vllmConfig.expertParallel.eplb balances the experts of expert parallelism, and spec.vllmConfig.expertParallel.enabled is false: remove eplb or turn expert parallelism on"},
		"EPLBRelease": {xr: dpXR("0.9.1", "vllmConfig.expertParallel", map[string]any{"eplb": map[string]any{}}),
			want: "spec.vllmConfig.expertParallel.eplb: vLLM 0.9.1 (vllmConfig.image docker.io/vllm/vllm-openai:v0.9.1) has no expert-parallel load balancer (--enable-eplb came with 0.9.2): use vLLM 0.9.2 or later, or remove eplb"},
		"BackendRelease": {xr: dpXR("0.10.2", "vllmConfig.expertParallel", map[string]any{"all2allBackend": "allgather_reducescatter"}),
			want: "spec.vllmConfig.expertParallel.all2allBackend allgather_reducescatter: vLLM 0.10.2 (vllmConfig.image docker.io/vllm/vllm-openai:v0.10.2) does not have it (it came with 0.11.0; this release has deepep_high_throughput, deepep_low_latency, naive, pplx): use vLLM 0.11.0 or later, or another backend"},
		"MultiNodeRay": {xr: wideEPXR("0.11.0"),
			want: "spec.vllmConfig.dataParallelSize 16 with multiNode needs vLLM 0.12.0 or later, where each pod of a group takes its ranks from its --node-rank (the mp backend's --nnodes); vLLM 0.11.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.11.0) runs a group on Ray: use vLLM 0.12.0 or later, or serve each replica on one pod"},
		"V0Engine": {xr: dpXR("0.9.2", "vllmConfig.v1", false),
			want: "spec.vllmConfig.dataParallelSize 4 cannot be combined with vllmConfig.v1 false: data-parallel serving is the V1 engine's (DPAsyncMPClient, vllm/v1/engine/core_client.py); remove v1: false"},
		"Disaggregation": {xr: dpXR("0.22.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12", "disaggregation", map[string]any{}, "vllmConfig.dataParallelSize", 2, "resources.gpu", "2", "vllmConfig.expertParallel", nil),
			want: "spec.vllmConfig.dataParallelSize 2 cannot be combined with disaggregation: the NIXL side channel of each data-parallel rank of a prefill pod is not established here; serve the groups without data parallelism"},
		"LMCache": {xr: dpXR("0.22.0", "lmcacheConfig", map[string]any{"enabled": true}),
			want: "spec.vllmConfig.dataParallelSize 4 cannot be combined with lmcacheConfig.enabled: LMCache's workers and ports per data-parallel rank are not established; turn LMCache off for this model"},
		// A model's own value names its own field.
		"PerModel": {xr: with("model", nil, "models", []any{map[string]any{"name": "m", "modelURL": "org/m", "vllmConfig": map[string]any{"dataParallelSize": 2}}}),
			want: "spec.models[0].vllmConfig.dataParallelSize: dataParallelSize 2 × tensorParallelSize 1 × pipelineParallelSize 1 = 2 GPUs, and spec.models[0].resources.gpu is 1: each data-parallel rank runs on tensorParallelSize × pipelineParallelSize GPUs of the pod; set spec.models[0].resources.gpu to 2, or dataParallelSize to 1"},
		"ExtraArgs": {xr: dpXR("0.22.0", "vllmConfig.extraArgs", []any{"--data-parallel-size=8"}),
			want: `spec.vllmConfig.extraArgs[0] "--data-parallel-size=8" is refused: spec.vllmConfig.dataParallelSize sets --data-parallel-size; set it there, not in extraArgs`},
		// Refused even where the stack renders no ranks: the arithmetic
		// would never count them.
		"ExtraArgsShort": {xr: with("vllmConfig.extraArgs", []any{"-dp", "2"}),
			want: `spec.vllmConfig.extraArgs[0] "-dp" is refused: vLLM's parser takes it for --data-parallel-size, and spec.vllmConfig.dataParallelSize sets --data-parallel-size; set it there, not in extraArgs`},
		"ExtraArgsHybrid": {xr: dpXR("0.22.0", "vllmConfig.extraArgs", []any{"--data-parallel-hybrid-lb"}),
			want: `spec.vllmConfig.extraArgs[0] "--data-parallel-hybrid-lb" is refused: spec.vllmConfig.dataParallelSize sets --data-parallel-hybrid-lb (the stack places every rank itself, on one pod or on each pod of a multiNode group from its LeaderWorkerSet variables, with vLLM's internal load balancing behind the one endpoint the routing layer sees); remove it`},
		"ExtraArgsEPLB": {xr: dpXR("0.22.0", "vllmConfig.extraArgs", []any{"--eplb-config", "{}"}),
			want: `spec.vllmConfig.extraArgs[0] "--eplb-config" is refused: spec.vllmConfig.expertParallel.eplb sets --eplb-config; set it there, not in extraArgs`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
}

// TestDataParallelSizing: expert parallelism spreads the experts over the
// ranks, so a model whose weights cannot load on tensor parallelism alone
// can on sixteen ranks; without expert parallelism each rank holds them all.
func TestDataParallelSizing(t *testing.T) {
	xr := func(ep any) map[string]any {
		return wideEPXR("0.22.0", "model.parameterCount", "671B", "resources.gpuMemory", "141Gi", "vllmConfig.expertParallel", ep)
	}
	if rsp := reconciled(t, xr(map[string]any{}), nil); rsp.refusal != "" || len(rsp.warnings) != 0 {
		t.Errorf("with expert parallelism: refusal %q, warnings %q", rsp.refusal, rsp.warnings)
	}
	rsp := reconciled(t, xr(nil), nil)
	if len(rsp.warnings) != 1 || !strings.Contains(rsp.warnings[0], "1342 GB per GPU at tensorParallelSize 1") {
		t.Errorf("without expert parallelism: warnings %q", rsp.warnings)
	}
}

// TestDataParallelFacts holds the releases the stack renders by
// (upstream/dataparallel.go) to the facts they come from
// (testdata/upstream/dataparallel.tsv).
func TestDataParallelFacts(t *testing.T) {
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "dataparallel.tsv"), 7)
	if err != nil {
		t.Fatal(err)
	}
	releases := map[string]upstream.Version{
		"--api-server-count default": upstream.VLLMAPIServersPerRank,
		"--enable-eplb":              upstream.VLLMEPLBFirst,
		"--eplb-config":              upstream.VLLMEPLBConfigFirst,
		"--all2all-backend":          upstream.VLLMAll2AllFlagFirst,
	}
	backends := 0
	for _, r := range rows {
		first, _ := upstream.ParseVersion(r[2])
		switch r[4] {
		case "backend":
			backends++
			if got, ok := upstream.All2AllBackendFirst[r[1]]; !ok || got != first {
				t.Errorf("backend %s: the stack has it from %v, the facts from %s", r[1], got, r[2])
			}
		case "release":
			want, ok := releases[r[1]]
			if !ok || want != first {
				t.Errorf("%s: the stack renders it from %v, the facts say %s", r[1], want, r[2])
			}
			delete(releases, r[1])
		}
	}
	if backends != len(upstream.All2AllBackendFirst) || len(releases) != 0 {
		t.Errorf("facts missing: %d backends of %d, releases %v", backends, len(upstream.All2AllBackendFirst), releases)
	}
}
