// Package v1beta1 contains the Input type of function-vllm-stack: the knobs a
// platform team sets once per Composition rather than per stack.
// +kubebuilder:object:generate=true
// +groupName=vllmstack.fn.crossplane.io
// +versionName=v1beta1
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This isn't a custom resource, in the sense that we never install its CRD.
// It is a KRM-like object, so we generate a CRD to describe its schema.

// Input configures function-vllm-stack for every ProductionStack composed by
// the Composition that uses it.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=crossplane
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Router image used by every stack unless a stack sets
	// routerConfig.image.
	// +optional
	Router *RouterInput `json:"router,omitempty"`

	// Engine defaults used when a stack leaves them unset.
	// +optional
	Engine *EngineInput `json:"engine,omitempty"`

	// The LoRA adapter sync container that stacks with
	// model.enableRuntimeAdapters run beside vLLM. It runs this function's
	// own binary (`function adapter-sync`), so its image is the function
	// package's runtime image.
	// +optional
	AdapterSync *AdapterSyncInput `json:"adapterSync,omitempty"`

	// Storage defaults used when a stack leaves them unset.
	// +optional
	Storage *StorageInput `json:"storage,omitempty"`

	// How long Crossplane may cache the function's response before calling
	// it again (the requeue interval with realtime compositions), e.g. 30s.
	// Overrides the --ttl flag.
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// RouterInput pins the router image.
type RouterInput struct {
	// Image repository of the router. Default: lmcache/lmstack-router.
	// +optional
	Image string `json:"image,omitempty"`

	// Image tag of the router; pin it. Default: latest.
	// +optional
	Tag string `json:"tag,omitempty"`

	// Router release of stacks whose router image tag is not a release
	// (latest, a custom image), e.g. 0.1.9. Default: the newest the
	// function knows.
	// +optional
	Version string `json:"version,omitempty"`
}

// EngineInput holds engine defaults.
type EngineInput struct {
	// Engine image used when a stack sets no vllmConfig.image. Default:
	// vllm/vllm-openai:latest.
	// +optional
	Image string `json:"image,omitempty"`

	// Registry used when a stack sets no vllmConfig.imagePullRegistry.
	// Default: docker.io.
	// +optional
	ImagePullRegistry string `json:"imagePullRegistry,omitempty"`

	// vLLM release of engines whose image tag is not a release (latest,
	// lmcache/vllm-openai, a custom image) and that set no
	// vllmConfig.engineVersion, e.g. 0.9.2. Default: the newest the
	// function knows.
	// +optional
	Version string `json:"version,omitempty"`
}

// StorageInput holds model cache defaults.
type StorageInput struct {
	// StorageClass used when a stack sets no storage.storageClassName.
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`

	// Claim size used when a stack sets no storage.size. Default: 50Gi.
	// +optional
	Size string `json:"size,omitempty"`
}

// AdapterSyncInput is where the adapter sync container's image comes from.
type AdapterSyncInput struct {
	// The function's own image, e.g.
	// xpkg.crossplane.io/vllm-project/function-vllm-stack:v0.4.0 (the
	// package's runtime image, as the Function's revision shows it). Stacks
	// with runtime adapters are refused without it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image,omitempty"`
}
