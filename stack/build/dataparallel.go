package build

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// DataParallelRPCPort is the port of the data-parallel handshake on a
// multi-node group's leader: vLLM's default (data_parallel_rpc_port 29550,
// V@v0.9.0:vllm/config.py, V@017e9f4448:vllm/config/parallel.py:143),
// written out so every pod of the group names the same one. The group's pods
// reach each other on every port (engineIngress).
const DataParallelRPCPort = "29550"

// dataParallelArgs are an engine's data- and expert-parallel options (facts:
// upstream/dataparallel.go, testdata/upstream/dataparallel.tsv):
//
//   - one pod: --data-parallel-size=D; vLLM runs the D ranks and balances
//     requests over them itself (internal load balancing), so the pod is one
//     endpoint to the router or the picker.
//   - a multi-node group (vLLM 0.12.0 or later, the mp backend of
//     multiNodeArgs): the same, with --data-parallel-size-local=L, the
//     leader's address (dataParallelAddress) and the handshake port on
//     every pod. Each pod's first
//     rank follows from its --node-rank (LWS_WORKER_INDEX): vLLM infers
//     data_parallel_rank = node_rank × (world size / nnodes) / (TP × PP)
//     (V@0bec63fa3:vllm/engine/arg_utils.py:1450-1516,
//     V@017e9f4448:vllm/engine/arg_utils.py:2081-2189), which is L × the
//     worker index; no --data-parallel-start-rank, which would also switch
//     the leader to hybrid load balancing (:2164-2166). The workers are
//     headless, the leader's API server(s) serve every rank.
//   - expert parallelism: --enable-expert-parallel; EPLB and its settings as
//     the release takes them; the all-to-all backend as a flag from 0.11.1
//     (as a variable before: all2allEnv).
//   - from 0.16.0 vLLM starts one API server per rank under internal load
//     balancing, and refuses more than one with runtime LoRA updating
//     (VLLM_ALLOW_RUNTIME_LORA_UPDATING, set with model.enableLoRA): the
//     leader then gets --api-server-count=1.
func dataParallelArgs(e resolve.Engine) []string {
	var args []string
	if e.DataParallel > 1 {
		args = append(args, opt("--data-parallel-size", itoa(e.DataParallel)))
		if e.MultiNode && !e.Ray {
			args = append(args, opt("--data-parallel-size-local", itoa(e.DataParallelLocal)),
				"--data-parallel-address", dataParallelAddress(e), "--data-parallel-rpc-port", DataParallelRPCPort)
		}
		if e.Model.EnableLoRA && !e.LWSWorker && e.VLLM.Version.AtLeast(upstream.VLLMAPIServersPerRank) {
			args = append(args, "--api-server-count", "1")
		}
	}
	if !e.ExpertParallel {
		return args
	}
	args = append(args, "--enable-expert-parallel")
	args = append(args, eplbArgs(e)...)
	if b := resolve.All2AllBackend(e); b != "" && e.VLLM.Version.AtLeast(upstream.VLLMAll2AllFlagFirst) {
		args = append(args, opt("--all2all-backend", b))
	}
	return args
}

// dataParallelAddress is where a group's pods meet for the data-parallel
// handshake: the leader binds its ZMQ sockets there (the handshake, the
// coordinator, the API servers' queues: V@017e9f4448:vllm/v1/engine/
// utils.py:1025-1045,1168-1184, coordinator.py:85) and rank 0's DP group
// port (vllm/config/parallel.py:599-606), so the leader names its own pod
// IP, $(POD_IP), which engineEnv sets first in every engine container:
// libzmq binds only an address or an interface, never a DNS name
// (tcp_address_t::resolve: allow_dns is !local), and LWS_LEADER_ADDRESS is
// the leader pod's DNS name. The workers connect to the leader by that
// name, which ZMQ and torch.distributed resolve. vLLM's own recipe gives
// node 0 its own IP (V@017e9f4448:docs/serving/
// data_parallel_deployment.md:30-60), and KServe resolves the name to an IP
// for the same reason (multinode.tsv).
func dataParallelAddress(e resolve.Engine) string {
	if e.LWSWorker {
		return lwsLeaderAddress
	}
	return "$(" + PodIPEnv.Name + ")"
}

// eplbArgs turn the load balancer on with its settings: --eplb-config's JSON
// from 0.10.2, the separate flags before.
func eplbArgs(e resolve.Engine) []string {
	b := e.EPLB
	if b == nil {
		return nil
	}
	args := []string{"--enable-eplb"}
	if e.VLLM.Version.AtLeast(upstream.VLLMEPLBConfigFirst) {
		if cfg := eplbConfig(b); cfg != "" {
			args = append(args, opt("--eplb-config", cfg))
		}
		return args
	}
	if b.NumRedundantExperts != nil {
		args = append(args, opt("--num-redundant-experts", itoa(*b.NumRedundantExperts)))
	}
	if b.WindowSize != nil {
		args = append(args, opt("--eplb-window-size", itoa(*b.WindowSize)))
	}
	if b.StepInterval != nil {
		args = append(args, opt("--eplb-step-interval", itoa(*b.StepInterval)))
	}
	if b.LogBalancedness != nil && *b.LogBalancedness {
		args = append(args, "--eplb-log-balancedness")
	}
	return args
}

// eplbConfig is --eplb-config's JSON with the settings the user wrote, ""
// when none: vLLM keeps its defaults for the others.
func eplbConfig(b *v1alpha1.EPLB) string {
	cfg := struct {
		WindowSize          *int32 `json:"window_size,omitempty"`
		StepInterval        *int32 `json:"step_interval,omitempty"`
		NumRedundantExperts *int32 `json:"num_redundant_experts,omitempty"`
		LogBalancedness     *bool  `json:"log_balancedness,omitempty"`
	}{b.WindowSize, b.StepInterval, b.NumRedundantExperts, b.LogBalancedness}
	out, _ := json.Marshal(cfg)
	if string(out) == "{}" {
		return ""
	}
	return string(out)
}

// all2allEnv is the all-to-all backend before vLLM 0.11.1, which reads it
// from VLLM_ALL2ALL_BACKEND only (V@v0.9.0:vllm/envs.py:816,
// V@be22bb6f3:vllm/envs.py:1247-1253).
func all2allEnv(e resolve.Engine) []corev1.EnvVar {
	b := resolve.All2AllBackend(e)
	if b == "" || e.VLLM.Version.AtLeast(upstream.VLLMAll2AllFlagFirst) {
		return nil
	}
	return []corev1.EnvVar{{Name: "VLLM_ALL2ALL_BACKEND", Value: b}}
}

// IPCLock is the capability to lock memory pages, beyond RLIMIT_MEMLOCK.
const IPCLock corev1.Capability = "IPC_LOCK"

// engineSecurityContext is the engine container's security context: the
// user's (pod.containerSecurityContext), and IPC_LOCK added for DeepEP's
// all-to-all across the pods of a group. DeepEP's kernels between nodes go
// over NVSHMEM on InfiniBand or RoCE (vLLM's docs: "Multi-node prefill",
// "Multi-node decode", V@017e9f4448:docs/serving/expert_parallel_deployment.md:
// 27-28), which registers memory the process must lock: vLLM's docs ask for
// `ulimit -l` unlimited there (:217) and, for GPUDirect RDMA in Kubernetes,
// the IPC_LOCK capability (V@017e9f4448:docs/serving/
// parallelism_scaling.md:168-199). Nothing else of the guides' pods (more
// capabilities, NVSHMEM variables, host networking) is added: each depends
// on the cluster's network, and pod.containerSecurityContext and env take it.
func engineSecurityContext(e resolve.Engine) *corev1.SecurityContext {
	sc := e.Cfg.Pod.ContainerSecurityContext
	if !e.MultiNode || !strings.HasPrefix(resolve.All2AllBackend(e), "deepep_") {
		return sc
	}
	out := &corev1.SecurityContext{}
	if sc != nil {
		out = sc.DeepCopy()
	}
	if out.Capabilities == nil {
		out.Capabilities = &corev1.Capabilities{}
	}
	if !slices.Contains(out.Capabilities.Add, IPCLock) {
		out.Capabilities.Add = append(out.Capabilities.Add, IPCLock)
	}
	return out
}
