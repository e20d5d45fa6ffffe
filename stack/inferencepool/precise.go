package inferencepool

import (
	"fmt"
	"strconv"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Precise is what the picker needs to route on the engines' KV events
// (llm-d v0.9.0 and later; ../testdata/upstream/PRECISE-PREFIX.md).
type Precise struct {
	// Model is the name the requests carry and the engines serve: the
	// token-producer stamps it into its render calls, and the engines
	// publish their events under it.
	Model string
	// RenderURL is the base URL of the engines that tokenize for the
	// picker: the model's engine Service, whose vLLM serves
	// /v1/completions/render and /v1/chat/completions/render.
	RenderURL string
	// BlockSize and HashSeed are the engines' --block-size and
	// PYTHONHASHSEED.
	BlockSize int
	HashSeed  string
	// EventsPort is where each engine publishes its events.
	EventsPort int
}

// ConfigPrecise is Config with the precise pipeline of llm-d v0.9.0 and
// later (LLMD-R@v0.10.0:deploy/config/epp-precise-prefix-cache-config.yaml):
// the token-producer tokenizes each request through the engines' render
// endpoints (its vllm backend; tokenizer/vllm_http.go:40-45,79-81), the
// precise-prefix-cache-producer subscribes to the KV events of every
// endpoint the endpoint-notification-source reports
// (preciseprefixcache/extractor.go:35-94) and writes each endpoint's match,
// and the prefix-cache-scorer, at the weight it has, scores that match
// (prefixMatchInfoProducerName). The other scorers keep their weights.
func ConfigPrecise(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64, p Precise) string {
	return config(r, w, kvCacheMetric, ttlSeconds, "", &p, []profile{{name: "default"}})
}

// scorerParameters point the prefix-cache-scorer at the producer's match
// (…/scorer/prefix/…: prefixMatchInfoProducerName, from v0.9.0).
func (p *Precise) scorerParameters() string {
	return "  parameters:\n    prefixMatchInfoProducerName: " + upstream.PickerPrecisePrefixProducer + "\n"
}

// plugins are the token-producer, the notification source and the
// producer. tokenProcessorConfig: blockSizeTokens (blockSize is its
// deprecated alias from llm-d-kv-cache v0.9.0, token_processor.go:36-42)
// and hashSeed; kvEventsConfig: the default topic filter and concurrency,
// per-endpoint subscriptions (discoverPods, without which Extract does
// nothing, extractor.go:36) on the engines' port. indexerConfig is the
// default (kvcache.NewDefaultConfig; tokenizersPoolConfig is refused,
// producer.go:141-145).
func (p *Precise) plugins() string {
	return fmt.Sprintf("- type: %s\n  parameters:\n    modelName: %s\n    vllm:\n      url: %s\n", upstream.PickerTokenProducer, strconv.Quote(p.Model), p.RenderURL) +
		fmt.Sprintf("- type: %s\n", upstream.PickerEndpointNotification) +
		fmt.Sprintf("- type: %s\n  parameters:\n    tokenProcessorConfig:\n      blockSizeTokens: %d\n      hashSeed: %s\n"+
			"    kvEventsConfig:\n      topicFilter: %s\n      concurrency: 4\n      discoverPods: true\n      podDiscoveryConfig:\n        socketPort: %d\n",
			upstream.PickerPrecisePrefixProducer, p.BlockSize, strconv.Quote(p.HashSeed), strconv.Quote(upstream.PickerKVEventsTopicFilter), p.EventsPort)
}

// source is the data layer source that reports the pool's endpoints to the
// producer, its extractor.
func (p *Precise) source() string {
	return fmt.Sprintf("  - pluginRef: %s\n    extractors:\n    - pluginRef: %s\n", upstream.PickerEndpointNotification, upstream.PickerPrecisePrefixProducer)
}
