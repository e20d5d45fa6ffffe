package upstream

import "strconv"

// Precise prefix-cache routing: the engines publish their KV-cache events
// and llm-d's picker indexes the blocks each engine holds
// (../stack/testdata/upstream/PRECISE-PREFIX.md and precise-prefix.tsv, with
// citations; LLMD-R is llm-d/llm-d-router, V vLLM).

var (
	// VLLMKVEventsSince: --kv-events-config (KVEventsConfig JSON), from
	// 0.9.0 (V@v0.9.0:vllm/engine/arg_utils.py:832; absent at 0.8.5).
	VLLMKVEventsSince = V(0, 9, 0)

	// VLLMRenderSince: `vllm serve` answers /v1/completions/render and
	// /v1/chat/completions/render (PR #32473, main 2026-01-19), which the
	// picker's token-producer calls to tokenize with the engine's own
	// tokenizer and chat template: in 0.16.0's merge-base 22b64948f
	// (vllm/entrypoints/openai/completion/api_router.py:76,
	// chat_completion/api_router.py:77) and every release read after it.
	VLLMRenderSince = V(0, 16, 0)

	// PickerPrecisePrefixSince: the first llm-d release whose picker can
	// tokenize without a sidecar: the token-producer's vllm backend
	// (LLMD-R@v0.9.0:pkg/epp/framework/plugins/requestcontrol/dataproducer/
	// tokenizer/tokenizer.go:48,72-79, vllm_http.go:40-45). v0.6.0 to v0.8.0
	// have the precise scorer, but their images are built without the
	// embedded tokenizers (Dockerfile.epp: "no embedded tokenizer" at v0.6.0,
	// CGO_ENABLED=0 at v0.7.0 and v0.8.0), so their only tokenizer is the
	// gRPC one over a Unix socket, a sidecar the function does not run
	// (KVC@v0.7.1:pkg/tokenization/pool_uds.go:1,35).
	PickerPrecisePrefixSince = V(0, 9, 0)
)

// The plugins of the precise pipeline from llm-d v0.9.0
// (LLMD-R@v0.10.0: tokenizer/tokenizer.go:51, preciseprefixcache/producer.go:48,
// datalayer/source/notifications; sample deploy/config/
// epp-precise-prefix-cache-config.yaml at v0.9.0 and v0.10.0).
const (
	PickerTokenProducer         = "token-producer"
	PickerPrecisePrefixProducer = "precise-prefix-cache-producer"
	PickerEndpointNotification  = "endpoint-notification-source"
	// PickerKVEventsTopicFilter is the producer's default ZMQ subscription
	// prefix (KVC@v0.9.0 and LLMD-R@v0.10.0 pkg/kvevents/pool.go:141).
	PickerKVEventsTopicFilter = "kv@"
)

// KVEventsPort is where each engine publishes its KV events and where the
// picker dials it: the producer subscribes to tcp://<endpoint
// address>:<podDiscoveryConfig.socketPort + rank> of every endpoint of its
// pool (LLMD-R@v0.10.0:…/preciseprefixcache/extractor.go:74-75, v0.9.0
// :68-69), socketPort 5557 by default (pkg/kvevents/pool.go:134@v0.10.0),
// vLLM's default endpoint tcp://*:5557 (V@017e9f4448:vllm/config/kv_events.py:23).
const KVEventsPort = 5557

// PickerPrecisePrefix reports whether a picker release can route on the
// engines' KV events with a tokenizer the function can give it.
func PickerPrecisePrefix(r PickerRelease) bool {
	return r.Kind == PickerLLMD && r.AtLeast(PickerPrecisePrefixSince)
}

// KVEventsTopic is the topic an engine publishes its KV events under:
// "kv@<pod-id>@<model>", which the picker's vLLM adapter splits at '@'
// (LLMD-R@v0.10.0:pkg/kvevents/engineadapter/common.go:36-45). The model is
// the name the requests carry: the picker keys blocks by the topic's model
// and looks them up by the request's target model
// (…/preciseprefixcache/blockkeys.go:63@v0.10.0). The pod id is the
// endpoint's address:port, which v0.9.0 indexes blocks under and scores by
// (KVC@v0.9.0:pkg/kvevents/pool.go:207,213; LLMD-R@v0.9.0:
// …/preciseprefixcache/producer.go:294); v0.10.0 takes the subscriber's
// endpoint instead (pool.go:321-322), the same string.
func KVEventsTopic(podAddress string, port int, model string) string {
	return PickerKVEventsTopicFilter + podAddress + ":" + strconv.Itoa(port) + "@" + model
}
