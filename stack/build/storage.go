package build

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

const (
	ModelCachePath = "/data"
)

const (
	templatesPath = "/templates"
)

const (
	ChatTemplateKey = "chat-template.jinja"
)

const (
	shmPath = "/dev/shm"
)

const (
	VolumeShm = "shm"
)

const (
	lmcacheDiskPath = ModelCachePath + "/lmcache"
)

const (
	lmcacheDiskURL = "file://" + lmcacheDiskPath + "/"
)

const (
	VolumeLMCacheDisk = "lmcache-disk"
)

// LMCacheDiskVolume is the emptyDir that holds the disk buffer when there is
// no model cache volume to put it on; it is sized to the buffer.
func LMCacheDiskVolume(e resolve.Engine) (corev1.Volume, bool) {
	l := e.Cfg.LMCacheConfig
	if !e.LMCache || l.DiskOffloadingBufferSize == "" || resolve.Enabled(e.Cfg.Storage.Enabled) {
		return corev1.Volume{}, false
	}
	g, _ := resolve.Gibibytes(l.DiskOffloadingBufferSize)
	size := *resource.NewQuantity(int64(g*resolve.Gib), resource.BinarySI)
	return corev1.Volume{Name: VolumeLMCacheDisk, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size},
	}}, true
}

// ModelCacheVolume is the volume mounted at /data, if storage is enabled.
func modelCacheVolume(s *resolve.Stack, e resolve.Engine) (corev1.Volume, bool) {
	st := e.Cfg.Storage
	var src corev1.VolumeSource
	switch {
	case !resolve.Enabled(st.Enabled):
		return corev1.Volume{}, false
	case st.EmptyDir != nil:
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		if st.EmptyDir.SizeLimit != "" {
			src.EmptyDir.SizeLimit = ptr.To(resource.MustParse(st.EmptyDir.SizeLimit))
		}
	case st.ExistingClaimName != "":
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: st.ExistingClaimName}
	default:
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.Names.StorageClaim(resolve.ClaimEngine(e).ID)}
	}
	return corev1.Volume{Name: e.CacheVolume, VolumeSource: src}, true
}

// StorageClaim builds the model cache claim. Model weights are downloaded
// into it once (HF_HOME=/data) and survive pod restarts and rollouts.
func storageClaim(s *resolve.Stack, e resolve.Engine) *corev1.PersistentVolumeClaim {
	e = resolve.ClaimEngine(e)
	st := e.Cfg.Storage
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: s.Meta(s.Names.StorageClaim(e.ID), EngineLabels(s.Name, e)),
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
func engineVolumes(s *resolve.Stack, e resolve.Engine) []corev1.Volume {
	var vols []corev1.Volume
	if v, ok := modelCacheVolume(s, e); ok {
		vols = append(vols, v)
	}
	if e.Model.ChatTemplate != "" {
		vols = append(vols, corev1.Volume{Name: e.TemplatesVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.Names.ChatTemplates(e.ID)}},
		}})
	}
	if e.Shm {
		// NCCL exchanges tensors between tensor-parallel workers through
		// /dev/shm; the container runtime's 64Mi default is far too small.
		size := resolve.ShmQuantity(e)
		vols = append(vols, corev1.Volume{Name: VolumeShm, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size},
		}})
	}
	if v, ok := LMCacheDiskVolume(e); ok {
		vols = append(vols, v)
	}
	if v, ok := kvOffloadVolume(s, e); ok {
		vols = append(vols, v)
	}
	return append(vols, e.Cfg.Storage.ExtraVolumes...)
}

// EngineVolumeMounts are the volumes the engine's vllm container mounts.
func EngineVolumeMounts(e resolve.Engine) []corev1.VolumeMount {
	var mounts []corev1.VolumeMount
	if resolve.Enabled(e.Cfg.Storage.Enabled) {
		mounts = append(mounts, corev1.VolumeMount{Name: e.CacheVolume, MountPath: ModelCachePath})
	}
	if e.Model.ChatTemplate != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: e.TemplatesVolume, MountPath: templatesPath, ReadOnly: true})
	}
	if e.Shm {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeShm, MountPath: shmPath})
	}
	if _, ok := LMCacheDiskVolume(e); ok {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeLMCacheDisk, MountPath: lmcacheDiskPath})
	}
	if e.KVOffloadFS != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeKVOffload, MountPath: KVOffloadPath})
	}
	if e.RuntimeAdapters {
		mounts = append(mounts, adaptersync.EngineMount(runtimeAdaptersDir))
	}
	return append(mounts, e.Cfg.Storage.ExtraVolumeMounts...)
}
