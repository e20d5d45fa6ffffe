// Package v1alpha1 holds the Go types of the ProductionStack API
// (serving.vllm.ai/v1alpha1). The XRDs in xrd/ are generated from these
// types (see xrd/gen), so the schema the API server validates and the structs
// the function decodes cannot drift apart.
//
// +kubebuilder:object:generate=false
// +groupName=serving.vllm.ai
// +versionName=v1alpha1
package v1alpha1
