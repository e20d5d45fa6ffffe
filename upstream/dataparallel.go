package upstream

// Data and expert parallelism in `vllm serve`, by release (issue 41). Each
// value cites vLLM's source at the release (neuralmagic/vllm mirror: V@<tag
// or commit>, the release commits as in ../stack/testdata/upstream/
// vllm-flags.tsv's header); the rows, with the same citations, are in
// ../stack/testdata/upstream/vllm-flags.tsv and dataparallel.tsv.
var (
	// --data-parallel-size (-dp) and --enable-expert-parallel exist from the
	// oldest release (V@v0.8.3:vllm/engine/arg_utils.py:429,438), and the
	// V1 engine's client serves several ranks of one pod
	// (V@v0.8.3:vllm/v1/engine/core_client.py:66,712 DPAsyncMPClient).
	VLLMDataParallelFirst = V(0, 8, 3)

	// --data-parallel-size-local, --data-parallel-address and
	// --data-parallel-rpc-port (default 29550) from 0.9.0
	// (V@v0.9.0:vllm/engine/arg_utils.py:606,611,616).
	VLLMDataParallelLocalFirst = V(0, 9, 0)

	// Expert-parallel load balancing: --enable-eplb with
	// --num-redundant-experts, --eplb-window-size, --eplb-step-interval,
	// --eplb-log-balancedness from 0.9.2 (V@v0.9.2:vllm/engine/arg_utils.py:
	// 687-695); from 0.10.2 the settings are --eplb-config's JSON keys
	// window_size, step_interval, num_redundant_experts, log_balancedness
	// (V@99bfef841:vllm/engine/arg_utils.py:695, vllm/config/parallel.py:
	// 40-53; V@017e9f4448:vllm/config/parallel.py:62-75), the old flags
	// deprecated and gone by 0.12.0 (absent at V@0bec63fa3).
	VLLMEPLBFirst       = V(0, 9, 2)
	VLLMEPLBConfigFirst = V(0, 10, 2)

	// The all-to-all backend of expert parallelism: the variable
	// VLLM_ALL2ALL_BACKEND from 0.9.0 (V@v0.9.0:vllm/envs.py:816) up to
	// 0.11.0; the flag --all2all-backend from 0.11.1
	// (V@5bb1da519:vllm/engine/arg_utils.py:828, vllm/config/parallel.py:
	// 120-130), which the stack renders from then on.
	VLLMAll2AllEnvFirst  = V(0, 9, 0)
	VLLMAll2AllFlagFirst = V(0, 11, 1)

	// From PR #32525 (803e3f3f68, main 2026-01-22; in 0.16.0 for certain)
	// vLLM defaults --api-server-count under data parallelism to the
	// data-parallel size (internal load balancing), to the local size (hybrid)
	// or 1 (external) (V@4ff865c38:vllm/entrypoints/cli/serve.py:99-121);
	// before, to 1 (V@a85724bd6:vllm/entrypoints/openai/cli_args.py:265-270).
	VLLMAPIServersPerRank = V(0, 16, 0)
)

// All2AllBackendFirst is the first release whose all-to-all code knows each
// backend: naive and pplx from 0.9.0 (V@v0.9.0:vllm/distributed/
// device_communicators/cuda_communicator.py:61,65), DeepEP's two from 0.9.2
// (V@v0.9.2:…/cuda_communicator.py:82,86), allgather_reducescatter and
// flashinfer_all2allv from 0.11.0 (V@be22bb6f3:vllm/envs.py:1247-1253).
// Every one is still a choice at main (V@017e9f4448:vllm/config/
// parallel.py:42-54).
var All2AllBackendFirst = map[string]Version{
	"naive":                   V(0, 9, 0),
	"pplx":                    V(0, 9, 0),
	"deepep_high_throughput":  V(0, 9, 2),
	"deepep_low_latency":      V(0, 9, 2),
	"allgather_reducescatter": V(0, 11, 0),
	"flashinfer_all2allv":     V(0, 11, 0),
}
