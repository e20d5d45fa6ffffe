package build

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The filesystem offload tier's directory in the engine container and its
// volume.
const (
	KVOffloadPath   = "/kv-offload"
	VolumeKVOffload = "kv-offload"
)

// kvOffloadArgs configure vLLM's OffloadingConnector
// (stack/testdata/upstream/kvoffload.tsv). A CPU tier alone is vLLM's own
// --kv-offloading-size (GiB, the replica's total) with the native backend,
// which vLLM turns into the connector; with a filesystem tier the connector
// is written out: TieringOffloadingSpec, cpu_bytes_to_use, and one
// secondary tier of type fs rooted at the mounted directory. Validation
// refuses releases without either, and any other --kv-transfer-config.
func kvOffloadArgs(e resolve.Engine) []string {
	if !e.KVOffload {
		return nil
	}
	if e.KVOffloadFS == "" {
		return []string{
			opt("--kv-offloading-size", GibString(e.Cfg.KVOffloading.CPU)),
			opt("--kv-offloading-backend", "native"),
		}
	}
	b, _ := resolve.KVOffloadCPUBytes(e)
	return []string{opt("--kv-transfer-config", KVOffloadTransferConfig(b))}
}

// KVOffloadTransferConfig is the --kv-transfer-config of a CPU tier of
// cpuBytes over a filesystem tier at KVOffloadPath.
func KVOffloadTransferConfig(cpuBytes int64) string {
	type tier struct {
		Type    string `json:"type"`
		RootDir string `json:"root_dir"`
	}
	type extra struct {
		Spec  string `json:"spec_name"`
		CPU   int64  `json:"cpu_bytes_to_use"`
		Tiers []tier `json:"secondary_tiers"`
	}
	cfg := struct {
		Connector string `json:"kv_connector"`
		Role      string `json:"kv_role"`
		Extra     extra  `json:"kv_connector_extra_config"`
	}{upstream.VLLMKVOffloadConnector, "kv_both", extra{
		upstream.VLLMKVOffloadTieringSpec, cpuBytes,
		[]tier{{upstream.VLLMKVOffloadFSTier, KVOffloadPath}},
	}}
	out, _ := json.Marshal(cfg)
	return string(out)
}

// kvOffloadEnv fixes Python's hash seed with a filesystem tier: a block's
// file is named by its hash, chained from NONE_HASH, which vLLM draws at
// random unless PYTHONHASHSEED is set (vllm/v1/core/kv_cache_utils.py), so
// pods that share the tier (and a pod after its restart) find each other's
// blocks only with the same seed. With precise prefix-cache routing the
// picker chains its keys from the same seed (resolve.PrecisePrefixHashSeed,
// the value of hashSeedEnv).
func kvOffloadEnv(env []corev1.EnvVar, e resolve.Engine) []corev1.EnvVar {
	if e.KVOffloadFS == "" && !e.PrecisePrefix {
		return env
	}
	for _, v := range env {
		if v.Name == hashSeedEnv.Name {
			return env
		}
	}
	return append(env, hashSeedEnv)
}

// kvOffloadVolume is the filesystem tier's volume, if the engine has one.
func kvOffloadVolume(s *resolve.Stack, e resolve.Engine) (corev1.Volume, bool) {
	var src corev1.VolumeSource
	switch e.KVOffloadFS {
	case resolve.KVOffloadEmptyDir:
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		if l := e.Cfg.KVOffloading.FileSystem.EmptyDir.SizeLimit; l != "" {
			src.EmptyDir.SizeLimit = ptr.To(resource.MustParse(l))
		}
	case resolve.KVOffloadExistingClaim:
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: e.Cfg.KVOffloading.FileSystem.PersistentVolumeClaim.ClaimName}
	case resolve.KVOffloadNewClaim:
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.Names.KVOffloadClaim(e.ID)}
	default:
		return corev1.Volume{}, false
	}
	return corev1.Volume{Name: VolumeKVOffload, VolumeSource: src}, true
}

// DefaultKVOffloadAccessModes: the claim the stack creates is shared by the
// model's pods, on whichever nodes they run.
var DefaultKVOffloadAccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}

// kvOffloadClaim is the claim the stack creates for a filesystem tier.
func kvOffloadClaim(s *resolve.Stack, e resolve.Engine) *corev1.PersistentVolumeClaim {
	c := e.Cfg.KVOffloading.FileSystem.PersistentVolumeClaim
	modes := c.AccessModes
	if len(modes) == 0 {
		modes = DefaultKVOffloadAccessModes
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: s.Meta(s.Names.KVOffloadClaim(e.ID), EngineLabels(s.Name, e)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(c.Size)},
			},
		},
	}
	if c.StorageClassName != nil {
		pvc.Spec.StorageClassName = ptr.To(*c.StorageClassName)
	}
	return pvc
}
