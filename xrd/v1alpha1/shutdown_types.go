package v1alpha1

// Shutdown is how an engine pod stops when it is replaced, scaled down or
// evicted: the routing layer drops it first, then vLLM stops taking new
// requests and lets those in flight finish. The pod's grace period covers
// the routing delay, the drain and 20 s for vLLM to exit.
type Shutdown struct {
	// Seconds requests in flight may take to finish once the engine stops
	// taking new ones (vLLM's --shutdown-timeout from 0.19.0; on older
	// releases, and for prefill engines before 0.22.0, the pod waits that
	// long before vLLM is signalled). 0 aborts them at once, Kubernetes'
	// and vLLM's own behaviour. Default: 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	DrainSeconds *int32 `json:"drainSeconds,omitempty"`

	// Seconds the pod keeps serving after it is deleted, before vLLM is
	// signalled (a preStop sleep), so the router, the endpoint picker and
	// Service endpoints drop it first. 0 signals vLLM at once. Default: 5.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	RoutingDelaySeconds *int32 `json:"routingDelaySeconds,omitempty"`
}
