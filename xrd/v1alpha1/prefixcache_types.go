package v1alpha1

// PickerPrefixCache chooses how the picker knows what each engine holds in
// its prefix cache.
type PickerPrefixCache struct {
	// Estimated (the default): the prefix-cache scorer guesses from the
	// requests the picker itself sent to each endpoint. Precise: every
	// engine publishes its KV-cache events (--kv-events-config), the
	// picker subscribes to each endpoint of its pool, indexes the blocks
	// it really holds and tokenizes each request with the model's own
	// engines (their /render endpoints), so no tokenizer and no Hugging
	// Face token reach the picker. Precise needs llm-d's picker v0.9.0 or
	// later and vLLM 0.16.0 or later; the engines get --block-size and
	// PYTHONHASHSEED equal to the picker's blockSizeTokens and hashSeed.
	// The prefixCache weight of picker.scorers weighs it as before.
	// +optional
	// +kubebuilder:validation:Enum=Estimated;Precise
	Mode string `json:"mode,omitempty"`
}

// Prefix-cache modes of the picker.
const (
	PrefixCacheEstimated = "Estimated"
	PrefixCachePrecise   = "Precise"
)
