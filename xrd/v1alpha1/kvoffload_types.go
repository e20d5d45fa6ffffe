package v1alpha1

import corev1 "k8s.io/api/core/v1"

// KVOffloading offloads a model's KV cache through vLLM's own
// OffloadingConnector, independent of LMCache: finished KV blocks are copied
// to a CPU tier in host memory and, below it, to a filesystem tier, and
// blocks found there are loaded back instead of recomputed. The tiers need
// vLLM 0.16.0 (CPU tier) and 0.23.0 (filesystem tier) or later.
type KVOffloading struct {
	// Host memory of the CPU tier of one engine, a quantity such as 40Gi
	// (vLLM's --kv-offloading-size, or cpu_bytes_to_use: the total of the
	// engine's tensor- and pipeline-parallel GPUs; each data-parallel rank
	// is an engine with a tier of its own). It lives in the engine pods'
	// memory and, from vLLM 0.20.0, in their /dev/shm, which grows by each
	// pod's part; resources.memory must exceed that part. Required once a model's blocks are merged: a model may set
	// only its fileSystem over the top level's cpu.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu,omitempty"`

	// A filesystem tier below the CPU tier (vLLM's TieringOffloadingSpec
	// with a secondary tier of type fs, mounted at /kv-offload). Engines
	// that share a claim find each other's blocks there.
	// +optional
	FileSystem *KVOffloadFileSystem `json:"fileSystem,omitempty"`
}

// KVOffloadFileSystem is where the filesystem tier lives: an emptyDir of each
// pod, or a claim the model's pods share. Set exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.emptyDir) != has(self.persistentVolumeClaim)",message="set exactly one of emptyDir and persistentVolumeClaim"
type KVOffloadFileSystem struct {
	// A directory on the node, one per pod, gone with the pod. vLLM's
	// filesystem tier deletes no block: size the limit for what the pod
	// may write, or the kubelet evicts the pod when it is exceeded.
	// +optional
	EmptyDir *EmptyDirStorage `json:"emptyDir,omitempty"`

	// A claim shared by the model's pods: one the stack creates, or an
	// existing one.
	// +optional
	PersistentVolumeClaim *KVOffloadClaim `json:"persistentVolumeClaim,omitempty"`
}

// KVOffloadClaim is the claim of a filesystem tier.
// +kubebuilder:validation:XValidation:rule="!has(self.claimName) || size(self.claimName) == 0 || (!has(self.size) && !has(self.storageClassName) && !has(self.accessModes))",message="claimName mounts a claim the stack does not own: leave out size, storageClassName and accessModes"
type KVOffloadClaim struct {
	// Mount this existing claim; it is not owned by the stack and survives
	// its deletion. Unset: the stack creates a claim per model.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName,omitempty"`

	// Size of the claim the stack creates, e.g. 500Gi. Required without
	// claimName.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Size string `json:"size,omitempty"`

	// StorageClass of the claim the stack creates; unset uses the cluster's
	// default class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// Access modes of the claim the stack creates. Default:
	// [ReadWriteMany], which pods on several nodes need to share it.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}
