package upstream

// What the function knows of `vllm serve` by release: every spelling or
// switch that changed between the releases it supports. Each row is a fact
// of the upstream facts file (vllm-flags.tsv, FACTS.md §2-3), kept as test
// data in ../stack/testdata/upstream for the contract test. Flags and variables not
// listed here are the same in every supported release.
var (
	// The releases the function renders for: the seed stack's 0.8.3 up to
	// 0.27.1 (out by 2026-08-13), the newest release whose code is readable: main
	// of 2026-08-17 (017e9f4448) holds every main commit 0.27.1 was cut
	// from. 0.28.0 (2026-08-26) was cut from later commits no copy here
	// holds (../stack/testdata/upstream/vllm-flags.tsv, "0.23.0 to 0.27.1").
	VLLMOldest = V(0, 8, 3)
	VLLMNewest = V(0, 27, 1)

	// --no-enable-chunked-prefill exists from 0.8.5 (BooleanOptionalAction).
	// Before, --enable-chunked-prefill was a StoreBoolean: it takes "=false"
	// and has no --no- form; from 0.8.5 "=false" is rejected.
	VLLMNoChunkedPrefill = V(0, 8, 5)

	// LMCache connectors of --kv-transfer-config: LMCacheConnectorV1 (V1
	// engine) from 0.8.5; LMCacheConnector (V0 engine) up to 0.10.0, not
	// registered from 0.10.1.
	VLLMLMCacheV1First = V(0, 8, 5)
	VLLMLMCacheV0Gone  = V(0, 10, 1)

	// VLLM_USE_V1: "0" selects the V0 engine up to 0.10.2; 0.11.0 removed
	// the V0 engine (the server asserts VLLM_USE_V1, so "0" crashes) and
	// from 0.11.1 the variable is no longer read.
	VLLMV0EngineGone = V(0, 11, 0)
	VLLMUseV1Ignored = V(0, 11, 1)

	// vLLM's own images (vllm/vllm-openai) contain LMCache from 0.9.2: the
	// release build passes INSTALL_KV_CONNECTORS=true, which installs
	// requirements/kv_connectors.txt (PR #18193). Images 0.8.3-0.9.1 have no
	// LMCache, and both LMCache connectors import it when they load. The
	// LMCache is not pinned (`lmcache`; `lmcache >= 0.3.9` from 0.15.0): it is
	// whatever was current when the image was built, so the tag does not say
	// which.
	VLLMImageLMCacheFirst = V(0, 9, 2)

	// The V1 engine turns chunked prefill on whatever --no-enable-chunked-
	// prefill says (_set_default_args_v1, every release to 0.11.x); 0.12.0 is
	// the first release sure to honour it (PR #28665, 2025-11-14; 0.11.1 was
	// cut around then).
	VLLMV1ChunkedPrefillOff = V(0, 12, 0)

	// With any KV connector, vLLM refuses to start when
	// PYTORCH_CUDA_ALLOC_CONF holds "expandable_segments:True" (remapped
	// pages leave the connector's pinned registrations stale), unless the
	// cumem allocator is on (--enable-cumem-allocator, or
	// --enable-sleep-mode, which turns it on): PR #41237, merged on main
	// 2026-05-08, in 0.22.0 (4ff865c38, vllm/config/vllm.py
	// _verify_kv_transfer_compat); 0.21.0 is not bracketed.
	// --enable-cumem-allocator came with PR #33648 (main 2026-05-20), in
	// 0.22.0 too.
	VLLMKVConnectorRefusesExpandable   = V(0, 22, 0)
	VLLMKVConnectorMayRefuseExpandable = V(0, 21, 0)
	VLLMExpandableSegmentsSetting      = "expandable_segments:True"

	// --shutdown-timeout (int seconds, default 0): on SIGTERM the API
	// server stops the engine, which refuses new requests and, with a value
	// above 0, lets those in flight finish for that long before it exits
	// (0 aborts them). Added by PR #34730 (main 2026-03-06), reverted by
	// #36628 (2026-03-10), added again by #36666 (7afe0faab1, main
	// 2026-03-13); vLLM's 0.19.1 branch (neuralmagic/vllm
	// v0.19.1-llm-d-0.7-cherrypicks, cut from main of 2026-03-28) holds it.
	// 0.18.0 (about 2026-03-23) is not bracketed: its cut is not readable
	// here, so 0.19.0 is the first release the flag is rendered for, and
	// older releases drain in the pod's preStop instead. Before the flag,
	// SIGTERM cancels the HTTP server at once (launcher.py signal_handler,
	// V@v0.8.3:vllm/entrypoints/launcher.py:52-62, V@v0.10.0:...:57-68).
	VLLMShutdownTimeoutSince = V(0, 19, 0)

	// While it drains, an engine with a KV connector waits for the
	// connector's delayed frees too (a prefill engine's blocks until the
	// decode engine has read them): PR #43433 (82536acc54, main 2026-05-23,
	// in 0.22.0). Before, a draining prefill engine exits once its own
	// requests finish, while a decode engine may still read their KV.
	VLLMDrainWaitsForKVReadsSince = V(0, 22, 0)
)

const (
	// VLLMImageRepo is the repository of vLLM's own images, tagged with
	// the release (v0.9.2).
	VLLMImageRepo = "vllm/vllm-openai"
	// KVTransferV1 and KVTransferV0 connect vLLM's KV cache to LMCache in
	// the V1 and the V0 engine.
	KVTransferV1 = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
	KVTransferV0 = `{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}`
)
