package stack

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
)

// ownsClaim reports whether the stack creates the model cache claim itself;
// with existingClaimName it mounts a claim it does not own, with emptyDir it
// needs none.
func ownsClaim(e engine) bool {
	st := e.cfg.Storage
	return enabled(st.Enabled) && st.ExistingClaimName == "" && st.EmptyDir == nil
}

// sharedClaim reports whether the groups of a disaggregated model mount the
// model's own claim (S-M-storage-claim, key engine-M-storage) rather than
// one claim each: when the stack owns it and pods on several nodes may write
// it (ReadWriteMany). Turning disaggregation on or off then changes no
// claim, and the weights stay. A ReadWriteOnce claim cannot be shared by
// the groups' pods on other nodes (nor with the model's Deployment, which
// serves until the groups are ready), so each group keeps its own.
func sharedClaim(e engine) bool {
	return e.role != "" && ownsClaim(e) && slices.Contains(e.cfg.Storage.AccessModes, corev1.ReadWriteMany)
}

// claimEngine is the engine whose names and labels the claim e mounts
// takes: the model's for a shared claim, else e.
func claimEngine(e engine) engine {
	if sharedClaim(e) {
		e.id, e.label, e.role = e.modelID, e.modelLabel, ""
	}
	return e
}

// ownsClaimKey reports whether e's objects include the claim it mounts: a
// shared claim is composed with the model's first group.
func ownsClaimKey(e engine) bool {
	return ownsClaim(e) && (!sharedClaim(e) || e.role == roleGroups[0])
}

// modelCacheVolume is the volume mounted at /data, if storage is enabled.
func modelCacheVolume(s *resolvedStack, e engine) (corev1.Volume, bool) {
	st := e.cfg.Storage
	var src corev1.VolumeSource
	switch {
	case !enabled(st.Enabled):
		return corev1.Volume{}, false
	case st.EmptyDir != nil:
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		if st.EmptyDir.SizeLimit != "" {
			src.EmptyDir.SizeLimit = ptr.To(resource.MustParse(st.EmptyDir.SizeLimit))
		}
	case st.ExistingClaimName != "":
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: st.ExistingClaimName}
	default:
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.names.storageClaim(claimEngine(e).id)}
	}
	return corev1.Volume{Name: e.cacheVolume, VolumeSource: src}, true
}

// storageClaim builds the model cache claim. Model weights are downloaded
// into it once (HF_HOME=/data) and survive pod restarts and rollouts.
func storageClaim(s *resolvedStack, e engine) *corev1.PersistentVolumeClaim {
	e = claimEngine(e)
	st := e.cfg.Storage
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: s.meta(s.names.storageClaim(e.id), engineLabels(s.name, e)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: st.AccessModes,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(st.Size)},
			},
		},
	}
	// "" is kept: it binds the claim to a volume without a class, where
	// unset lets the cluster's default class provision one.
	if st.StorageClassName != nil {
		pvc.Spec.StorageClassName = ptr.To(*st.StorageClassName)
	}
	return pvc
}

// engineVolumes lists the engine pod's volumes in a fixed order.
func engineVolumes(s *resolvedStack, e engine) []corev1.Volume {
	var vols []corev1.Volume
	if v, ok := modelCacheVolume(s, e); ok {
		vols = append(vols, v)
	}
	if e.model.ChatTemplate != "" {
		vols = append(vols, corev1.Volume{Name: e.templatesVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.names.chatTemplates(e.id)}},
		}})
	}
	if needsShm(e) {
		// NCCL exchanges tensors between tensor-parallel workers through
		// /dev/shm; the container runtime's 64Mi default is far too small.
		size := resource.MustParse(or(e.cfg.Storage.ShmSize, DefaultShmSize))
		vols = append(vols, corev1.Volume{Name: volumeShm, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
		}})
	}
	if v, ok := lmcacheDiskVolume(e); ok {
		vols = append(vols, v)
	}
	return append(vols, e.cfg.Storage.ExtraVolumes...)
}

func engineVolumeMounts(e engine) []corev1.VolumeMount {
	var mounts []corev1.VolumeMount
	if enabled(e.cfg.Storage.Enabled) {
		mounts = append(mounts, corev1.VolumeMount{Name: e.cacheVolume, MountPath: modelCachePath})
	}
	if e.model.ChatTemplate != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: e.templatesVolume, MountPath: templatesPath, ReadOnly: true})
	}
	if needsShm(e) {
		mounts = append(mounts, corev1.VolumeMount{Name: volumeShm, MountPath: shmPath})
	}
	if _, ok := lmcacheDiskVolume(e); ok {
		mounts = append(mounts, corev1.VolumeMount{Name: volumeLMCacheDisk, MountPath: lmcacheDiskPath})
	}
	if runtimeAdaptersOn(e) {
		mounts = append(mounts, adaptersync.EngineMount(runtimeAdaptersDir))
	}
	return append(mounts, e.cfg.Storage.ExtraVolumeMounts...)
}

// needsShm: NCCL exchanges tensors between tensor-parallel workers through
// /dev/shm; an explicit shmSize mounts it whatever the parallelism.
func needsShm(e engine) bool {
	tp := e.cfg.VLLMConfig.TensorParallelSize
	return (tp != nil && *tp > 1) || e.cfg.Storage.ShmSize != ""
}
