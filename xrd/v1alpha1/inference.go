package v1alpha1

import corev1 "k8s.io/api/core/v1"

// InferenceExtension routes the stack's requests through the Gateway API
// Inference Extension instead of the production-stack router: per model an
// InferencePool (inference.networking.k8s.io/v1) that selects the model's
// engine pods, an endpoint picker that chooses one of them for each
// request by its queue, KV-cache use and prefix cache, and an HTTPRoute on
// your Gateway (one whose implementation supports the extension: Istio,
// kgateway, Agentgateway, NGINX Gateway Fabric, GKE) whose backend is the
// pool. Without this block the stack runs the production-stack router.
type InferenceExtension struct {
	// Route through the inference extension. Default: true when the block
	// is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Gateways the HTTPRoute attaches to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	ParentRefs []ParentRef `json:"parentRefs"`

	// Host names of the HTTPRoute.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Hostnames []string `json:"hostnames,omitempty"`

	// How long the gateway waits for a response (the HTTPRoute's
	// timeouts.request), a Gateway API duration such as 10m or 1h. Default:
	// the longest start-up budget of the stack's models (at least 10m), so a
	// request that waits for an engine is not cut short.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(h|m|s|ms)){1,4}$`
	RequestTimeout string `json:"requestTimeout,omitempty"`

	// The model the gateway's root path (/v1) serves, by its name in the
	// stack; every model is also served at /<model>/v1. Unset: the first
	// model when the stack starts routing through the extension, then the
	// model that holds /v1, so adding or removing another model never moves
	// it. Set it to give /v1 to another model, or to one again after its
	// holder was removed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RootModel string `json:"rootModel,omitempty"`

	// What the gateway does with a request while the endpoint picker does
	// not answer: FailClose refuses it, FailOpen sends it to any endpoint
	// of the pool. Default: FailClose.
	// +optional
	// +kubebuilder:validation:Enum=FailOpen;FailClose
	FailureMode string `json:"failureMode,omitempty"`

	// The endpoint picker of each model's pool.
	// +optional
	Picker *EndpointPicker `json:"picker,omitempty"`

	// llm-d's routing sidecar, which runs beside vLLM on the decode pods
	// of a disaggregated model: the picker chooses a decode and a prefill
	// endpoint for each request, and the sidecar sends the request to the
	// prefill engine, then to its own with the KV cache's whereabouts.
	// +optional
	RoutingSidecar *RoutingSidecar `json:"routingSidecar,omitempty"`
}

// RoutingSidecar configures llm-d's routing sidecar on the decode pods of
// a disaggregated model.
type RoutingSidecar struct {
	// Sidecar image with tag, of llm-d v0.7.0 or later. Default: the one
	// llm-d published with the picker's release,
	// ghcr.io/llm-d/llm-d-router-disagg-sidecar (before v0.9.0
	// ghcr.io/llm-d/llm-d-routing-sidecar) at the picker's tag. Its flags
	// are rendered for its tag's release, else the picker's.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// Pull policy of the sidecar image.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
}

// EndpointPicker configures the endpoint picker of each model's pool.
type EndpointPicker struct {
	// Picker image with tag: llm-d's (ghcr.io/llm-d/llm-d-router-endpoint-picker,
	// v0.6.0 or later) or the inference extension's own
	// (registry.k8s.io/gateway-api-inference-extension/epp, v1.0.0 to v1.5.0,
	// its last). Default: ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// The picker's release, such as 0.10.0, when the image tag does not say
	// it (latest, a digest, a mirror's tag). Default: the image tag's.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^v?[0-9]+[.][0-9]+[.][0-9]+$`
	Version string `json:"version,omitempty"`

	// Pull policy of the picker image.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// Picker pods per model. More than one elect a leader, which alone
	// picks (--ha-enable-leader-election; the stack's Role then also grants
	// leases). Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	Replicas *int32 `json:"replicas,omitempty"`

	// Picker container resources. Default: requests cpu 500m and memory
	// 512Mi.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Where the picker pods run.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`

	// How much each signal weighs when the picker scores a model's
	// endpoints. Default: the pickers' own, queue 2, kvCacheUtilization 2,
	// prefixCache 3.
	// +optional
	Scorers *PickerScorers `json:"scorers,omitempty"`

	// How the picker knows what each engine has cached. Default: Estimated.
	// +optional
	PrefixCache *PickerPrefixCache `json:"prefixCache,omitempty"`
}

// PickerScorers weigh the picker's scorers; 0 leaves a scorer out.
type PickerScorers struct {
	// Prefer endpoints with fewer waiting requests (queue-scorer).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Queue *int32 `json:"queue,omitempty"`

	// Prefer endpoints whose KV cache is less full
	// (kv-cache-utilization-scorer).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	KVCacheUtilization *int32 `json:"kvCacheUtilization,omitempty"`

	// Prefer endpoints that likely hold the request's prompt prefix in
	// their cache (prefix-cache-scorer).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	PrefixCache *int32 `json:"prefixCache,omitempty"`
}
