package helm2stack

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of the model cache: claims, storage classes, shared storage.

// pvcStorage is the claim's size, or {emptyDir: {...}} for an emptyDir.
func (c *converter) pvcStorage(n node) error {
	if m, ok := n.v.(map[string]any); ok {
		var v struct {
			EmptyDir *struct {
				SizeLimit string `json:"sizeLimit,omitempty"`
				Medium    string `json:"medium,omitempty"`
			} `json:"emptyDir"`
		}
		if err := n.object(&v); err != nil {
			return err
		}
		if v.EmptyDir == nil {
			return fmt.Errorf("%s must be a size such as 50Gi or {emptyDir: {sizeLimit: ...}}, got a map with %d other keys", n.path, len(m))
		}
		ensure(&c.engine().Storage).EmptyDir = &v1alpha1.EmptyDirStorage{SizeLimit: v.EmptyDir.SizeLimit}
		if v.EmptyDir.Medium != "" {
			c.res.drop(n.path+".emptyDir.medium", "not supported: the model cache emptyDir is on the node's disk")
		}
		return nil
	}
	s, err := n.scalar()
	if err == nil && s != "" {
		ensure(&c.engine().Storage).Size = s
	}
	return err
}

// storageClass is the claim's class, "" included: the chart sets
// storageClassName whenever the key is there, and "" binds a volume of no
// class.
func (c *converter) storageClass(n node) error {
	if n.v == nil {
		return nil
	}
	s, err := n.str()
	if err == nil {
		ensure(&c.engine().Storage).StorageClassName = &s
	}
	return err
}

// existingClaim: the chart (HEAD) mounts pvcExistingClaimName in place of
// the claim it would make for a pvcStorage size, and makes none; without a
// size (no pvcStorage, or an emptyDir) it ignores the key.
func (c *converter) existingClaim() {
	m := c.cur
	if m.existingClaim == "" {
		return
	}
	st := c.engine().Storage
	if st == nil || st.Size == "" {
		c.res.note(m.path+".pvcExistingClaimName", "ignored, as by the chart: it mounts an existing claim only in place of the claim of a pvcStorage size")
		return
	}
	if st.StorageClassName != nil || st.AccessModes != nil {
		c.res.note(m.path+".pvcExistingClaimName", "storageClass and pvcAccessMode are left out, as the chart makes no claim for an existing one")
	}
	st.ExistingClaimName = m.existingClaim
	st.Size, st.StorageClassName, st.AccessModes = "", nil, nil
}

// sharedStorage mounts the chart's shared claim into every model.
func (c *converter) sharedStorage(n node) error {
	var v struct {
		Enabled      bool     `json:"enabled"`
		Size         string   `json:"size"`
		AccessModes  []string `json:"accessModes"`
		StorageClass string   `json:"storageClass"`
		HostPath     string   `json:"hostPath"`
		NFS          struct {
			Server string `json:"server"`
			Path   string `json:"path"`
		} `json:"nfs"`
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if n.v == nil {
		return nil
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	volume, claim := c.opts.Name+"-shared-pvc-storage", c.opts.Name+"-shared-pvc-storage-claim"
	// The chart's volume name, which the chart itself renders invalid for
	// release names over 44 characters.
	if len(volume) > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("%s: the chart's volume name %s is over %d characters, which Kubernetes refuses: use a stack name (--name) of at most %d characters",
			n.path, volume, validation.DNS1123LabelMaxLength, validation.DNS1123LabelMaxLength-len("-shared-pvc-storage"))
	}
	st := ensure(&c.spec.EngineConfig.Storage)
	st.ExtraVolumes = append(st.ExtraVolumes, corev1.Volume{Name: volume,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	st.ExtraVolumeMounts = append(st.ExtraVolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/data/shared-pvc-storage"})
	setEnv(&c.spec.Env, corev1.EnvVar{Name: "HF_HOME", Value: "/data/shared-pvc-storage"})
	c.res.note(n.path, fmt.Sprintf("the stack mounts claim %s at /data/shared-pvc-storage (HF_HOME) in every model but does not create it: create a ReadWriteMany claim of size %s (and its volume, for hostPath or NFS) before applying the stack", claim, cmp.Or(v.Size, "100Gi")))
	return nil
}
