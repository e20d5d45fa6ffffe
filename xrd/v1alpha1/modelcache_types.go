package v1alpha1

// Prefetch fills a model's cache claim once, before its engines start: a
// Job per claim downloads the model (modelURL at revision, with
// vllmConfig.hfTokenSecret) into it, the engines are composed once the Job
// is Complete and read the cache offline (HF_HUB_OFFLINE=1), so no engine
// pod downloads, and a changed revision fills the claim again before the
// engines roll.
type Prefetch struct {
	// Fill the claim with a Job. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ModelCacheStatus is what the status says of a model's weights: the state
// of the Job that fills its cache (storage.prefetch), or, without one,
// whether anything is downloaded and by whom.
type ModelCacheStatus struct {
	// With storage.prefetch: Cached (the Job is Complete: the engines start
	// from the cache), Downloading (the Job runs; the engines wait) or
	// Failed. Without: NotNeeded (the model is a path on the pod's volumes,
	// or a URL vLLM loads itself) or OnEngineStart (each engine pod
	// downloads what its cache lacks when it starts).
	State string `json:"state"`
	// Why the Job failed, from its Failed condition; or, without a Job,
	// where the weights come from.
	// +optional
	Reason string `json:"reason,omitempty"`
}
