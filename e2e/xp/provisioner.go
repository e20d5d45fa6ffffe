package xp

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// ProvisionerName is the provisioner of the volumes a Provisioner makes: a
// StorageClass with this provisioner (and volumeBindingMode Immediate) is
// served by it; so are claims without a class (the test cluster has no
// default StorageClass).
const ProvisionerName = "e2e.vllm.ai/hostpath"

// labelProvisioned marks the PersistentVolumes a Provisioner made.
const labelProvisioned = "e2e.vllm.ai/provisioned"

// A Provisioner stands in for a dynamic volume provisioner: for every
// Pending PersistentVolumeClaim without a volume, in any namespace, it
// creates a PersistentVolume of the claim's size, access modes, volume mode
// and StorageClass, pre-bound to that claim (spec.claimRef with its UID), on
// the node; kube-controller-manager's PV binder then binds the two. Nothing
// is created on disk (no real kubelet mounts it). When the claim is gone and
// the volume Released, it deletes the volume, as the Delete reclaim policy
// of a dynamic provisioner would.
//
// Pre-binding keeps tests that run in parallel from binding each other's
// volumes, whatever their sizes.
type Provisioner struct {
	core   corev1client.CoreV1Interface
	node   string
	logf   func(string, ...any)
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartProvisioner starts provisioning volumes on node until Stop.
func StartProvisioner(ctx context.Context, core corev1client.CoreV1Interface, node string, logf func(string, ...any)) *Provisioner {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Provisioner{core: core, node: node, logf: logf, cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if err := p.sync(ctx); err != nil && ctx.Err() == nil {
				logf("provisioner: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Stop ends the provisioner; the volumes it made stay.
func (p *Provisioner) Stop() {
	p.cancel()
	p.wg.Wait()
}

func (p *Provisioner) sync(ctx context.Context) error {
	pvs, err := p.core.PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: labelProvisioned + "=true"})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, pv := range pvs.Items {
		have[pv.Name] = true
		if pv.DeletionTimestamp == nil && (pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed) {
			err := p.core.PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	pvcs, err := p.core.PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pvcs.Items {
		c := &pvcs.Items[i]
		name := "pvc-" + string(c.UID) // as external provisioners name them
		if c.DeletionTimestamp != nil || c.Spec.VolumeName != "" || c.Status.Phase != corev1.ClaimPending || have[name] {
			continue
		}
		size, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok {
			p.logf("provisioner: claim %s/%s requests no storage; skipped", c.Namespace, c.Name)
			continue
		}
		class := ""
		if c.Spec.StorageClassName != nil {
			class = *c.Spec.StorageClassName
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Labels:      map[string]string{labelProvisioned: "true"},
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": ProvisionerName},
			},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   c.Spec.AccessModes,
				VolumeMode:                    c.Spec.VolumeMode,
				StorageClassName:              class,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, // this provisioner deletes it
				ClaimRef: &corev1.ObjectReference{
					Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: c.Namespace, Name: c.Name, UID: c.UID,
				},
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/e2e-volumes/" + name},
				},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.node},
					}},
				}}}},
			},
		}
		if _, err := p.core.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create a volume for claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		have[name] = true
	}
	return nil
}
