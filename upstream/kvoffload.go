package upstream

// vLLM's native KV cache offloading (OffloadingConnector), by release
// (../stack/testdata/upstream/kvoffload.tsv, read in vLLM's source at each
// release's commit):
var (
	// --kv-offloading-size (GiB, the total of the replica's ranks) and
	// --kv-offloading-backend native|lmcache: PR #27621, main 2025-11-01,
	// in 0.11.1 (cut mid-November; certain from 0.12.0). Up to 0.12.0 the
	// size does nothing without the backend, so both are rendered.
	VLLMKVOffloadingSizeSince = V(0, 11, 1)

	// But the native backend's CPU tier starts only once the connector
	// reads the size: up to 0.13.x --kv-offloading-size passes
	// kv_bytes_per_rank, which nothing reads, and num_cpu_blocks 0, which
	// the CPU spec refuses ("num_cpu_blocks must be specified",
	// vllm/v1/kv_offload/cpu.py:24-27@0bec63fa3). cpu_bytes_to_use replaced
	// both (PR #24498, main 2026-01-12): 0.14.x and 0.15.x are not read
	// here, 0.16.0 is the first release read with it.
	VLLMKVOffloadCPUTierSince = V(0, 16, 0)

	// The multi-tier spec (TieringOffloadingSpec) with the filesystem tier
	// of type "fs": the framework came on main 2026-05-13 (#40020), the
	// tier as "fs_python" on 2026-05-24 (#41735), renamed "fs" on
	// 2026-05-28 (#43600). 0.22.0's cut (about 2026-05-29) is a boundary,
	// so the tier is rendered from 0.23.0, the first release read with it.
	VLLMKVOffloadTiersSince = V(0, 23, 0)

	// The CPU tier is a file in /dev/shm (/dev/shm/vllm_offload_<id>.mmap)
	// from PR #37206 (main 2026-04-14): 0.20.0 (about 2026-04-29) is a
	// boundary, so /dev/shm grows by the tier from 0.20.0, harmless if that
	// release still pins plain host memory.
	VLLMKVOffloadInShmSince = V(0, 20, 0)
)

const (
	// VLLMKVOffloadConnector is the connector both forms configure.
	VLLMKVOffloadConnector = "OffloadingConnector"
	// VLLMKVOffloadTieringSpec and VLLMKVOffloadFSTier select the
	// multi-tier spec and its filesystem tier in kv_connector_extra_config.
	VLLMKVOffloadTieringSpec = "TieringOffloadingSpec"
	VLLMKVOffloadFSTier      = "fs"
)
