package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Canary is a second version of a model served beside it, under the same
// name, with a share of its requests: another revision, image, arguments,
// resources or variables (the rest of the model's settings it shares).
// Each step is one field of this block: adding it
// starts the canary, weight moves its share, promote: true makes it the
// model (the model's engines roll to the canary's settings while the
// canary serves; the canary's objects go once they are ready), and removing
// the block aborts it (its objects go, nothing of the model changes).
// Behind the inference extension the weight splits the model's HTTPRoute
// across two InferencePools, one per version; behind the production-stack
// router, which round-robins over the ready endpoints that serve the model,
// the weight sets how many canary engines run beside the model's (see
// docs/canary.md). Not with disaggregation or scaleToZero.
type Canary struct {
	// Share of the model's requests, in percent, the canary gets. Behind
	// the router it is the canary's share of the model's engines, so it
	// sets the canary's replicas: round(weight × replicas / (100 − weight)),
	// at least 1 (a warning gives the share that results); 100 needs the
	// inference extension.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// Make the canary the model: the model's engines roll to the canary's
	// settings (make before break), and the canary's objects go once they
	// are ready. Then fold the canary's fields into the model and remove
	// this block: nothing rolls again.
	// +optional
	Promote bool `json:"promote,omitempty"`

	// Canary engines behind the inference extension. Default: 1. Behind
	// the router the weight sets them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	Replicas *int32 `json:"replicas,omitempty"`

	// Revision of the model the canary serves (--revision).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	Revision string `json:"revision,omitempty"`

	// Engine image of the canary, as vllmConfig.image.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// The vLLM release the canary's image runs, as
	// vllmConfig.engineVersion.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$`
	EngineVersion string `json:"engineVersion,omitempty"`

	// Extra arguments of the canary's vllm serve, instead of the model's
	// vllmConfig.extraArgs.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ExtraArgs []string `json:"extraArgs,omitempty"`

	// Resources of each canary engine, merged over the model's.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Environment variables of the canary's engine container, over the
	// model's (an entry with the name of one replaces it).
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Env []corev1.EnvVar `json:"env,omitempty"`
}

// VersionStatus is one version of a model with a canary: which, its share
// of the model's requests, and where a promotion stands.
type VersionStatus struct {
	// Stable (the model's engines) or Canary.
	Name string `json:"name"`
	// Percent of the model's requests it gets: the route's weight behind
	// the inference extension; behind the router its share of the
	// model's engines as the spec sets their replicas (while all are
	// ready: the router round-robins over the ready ones).
	Share int32 `json:"share"`
	// Serving, Promoting (the model's engines roll to the canary's
	// settings; the canary serves until they are ready) or Promoted (the
	// canary's objects are gone).
	// +optional
	State string `json:"state,omitempty"`
}
