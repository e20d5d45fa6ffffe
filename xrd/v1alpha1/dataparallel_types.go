package v1alpha1

// Data and expert parallelism (issue 41): the fields of vllmConfig that serve
// a mixture-of-experts model the way its operators do, many data-parallel
// ranks with its experts spread over them. Facts with their citations:
// stack/testdata/upstream/vllm-flags.tsv and dataparallel.tsv.

// ExpertParallel spreads a mixture-of-experts model's experts over the
// engine's GPUs (vLLM's --enable-expert-parallel) instead of splitting each
// expert by tensor parallelism: the expert-parallel group is
// dataParallelSize × tensorParallelSize GPUs, so it needs one of them above 1.
type ExpertParallel struct {
	// Spread the experts (--enable-expert-parallel). Default: true when the
	// block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Expert-parallel load balancing (vLLM's EPLB, --enable-eplb, from
	// vLLM 0.9.2): experts that take much traffic are replicated and moved
	// between GPUs while the engine serves.
	// +optional
	EPLB *EPLB `json:"eplb,omitempty"`

	// How tokens travel to the experts of other GPUs (--all2all-backend
	// from vLLM 0.11.1, the variable VLLM_ALL2ALL_BACKEND before): naive
	// and pplx from vLLM 0.9.0, deepep_high_throughput and
	// deepep_low_latency (DeepEP, for prefill and decode) from 0.9.2,
	// allgather_reducescatter (vLLM's default from 0.11.0) and
	// flashinfer_all2allv from 0.11.0. Unset leaves vLLM's default. The
	// engine image must carry the backend's library (DeepEP, pplx-kernels).
	// +optional
	// +kubebuilder:validation:Enum=naive;pplx;deepep_high_throughput;deepep_low_latency;allgather_reducescatter;flashinfer_all2allv
	All2AllBackend string `json:"all2allBackend,omitempty"`
}

// EPLB is vLLM's expert-parallel load balancer. Unset settings keep vLLM's
// defaults (window 1000 steps, rebalanced every 3000 steps, no redundant
// experts).
type EPLB struct {
	// Balance the experts (--enable-eplb). Default: true when the block is
	// set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Number of engine steps whose expert load is recorded for balancing
	// (eplb_config.window_size; --eplb-window-size before vLLM 0.10.2).
	// +optional
	// +kubebuilder:validation:Minimum=1
	WindowSize *int32 `json:"windowSize,omitempty"`

	// Steps between two rebalancings (eplb_config.step_interval;
	// --eplb-step-interval before vLLM 0.10.2).
	// +optional
	// +kubebuilder:validation:Minimum=1
	StepInterval *int32 `json:"stepInterval,omitempty"`

	// Extra copies of experts held across the expert-parallel group
	// (eplb_config.num_redundant_experts; --num-redundant-experts before
	// vLLM 0.10.2). Each copy takes GPU memory.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65536
	NumRedundantExperts *int32 `json:"numRedundantExperts,omitempty"`

	// Log how balanced the experts' load is (eplb_config.log_balancedness;
	// --eplb-log-balancedness before vLLM 0.10.2).
	// +optional
	LogBalancedness *bool `json:"logBalancedness,omitempty"`
}

// GetEnabled reports whether an expertParallel block asks for expert
// parallelism: set, and not enabled: false.
func (x *ExpertParallel) GetEnabled() bool { return x != nil && (x.Enabled == nil || *x.Enabled) }

// GetEnabled reports whether an eplb block asks for load balancing.
func (x *EPLB) GetEnabled() bool { return x != nil && (x.Enabled == nil || *x.Enabled) }
