//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// The replicas hand-over of issue 38 (stack/transition/handover.go): turning an
// autoscaler on for a model serving with replicas 3 must never take the
// Deployment below 3 before the autoscaler decides, and switching the
// autoscaler's kind deletes the old one before the new one is made.

// A replicasWatch polls a Deployment's spec.replicas every 100 ms and keeps
// the lowest count and every change seen.
type replicasWatch struct {
	stop    context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	lowest  int64
	changes []string
}

func watchReplicas(ns, name string) *replicasWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &replicasWatch{stop: cancel, done: make(chan struct{}), lowest: -1}
	go func() {
		defer close(w.done)
		last := int64(-2)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			d, err := admin.Dynamic.Resource(deploymentGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				r, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
				if !found {
					r = -1
				}
				w.mu.Lock()
				if w.lowest < 0 || r < w.lowest {
					w.lowest = r
				}
				if r != last {
					w.changes = append(w.changes, fmt.Sprintf("%s: %d", time.Now().Format("15:04:05.0"), r))
					last = r
				}
				w.mu.Unlock()
			} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
				w.mu.Lock()
				w.changes = append(w.changes, "error: "+err.Error())
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// end stops the watch and fails the test if the count ever went below
// floor.
func (w *replicasWatch) end(t *testing.T, floor int64, what string) {
	t.Helper()
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lowest < floor {
		t.Errorf("%s: the Deployment's spec.replicas went down to %d, below %d; changes: %s", what, w.lowest, floor, strings.Join(w.changes, ", "))
		return
	}
	t.Logf("%s: spec.replicas never below %d (lowest %d); changes: %s", what, floor, w.lowest, strings.Join(w.changes, ", "))
}

// replicasAt: the Deployment's spec.replicas is n and the stack Ready with n
// replicas.
func replicasAt(t *testing.T, s *testStack, engine string, n int64) func() (bool, string) {
	e := s.expect()
	e.models[0].replicas = n
	return func() (bool, string) {
		d := get(t, deploymentGVR, s.ns(), engine)
		if d == nil {
			return false, "no Deployment " + engine
		}
		if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != n {
			return false, fmt.Sprintf("spec.replicas %d, want %d", r, n)
		}
		return s.readyState(t, e)
	}
}

// replicasOwners are the field managers that own the Deployment's
// spec.replicas.
func replicasOwners(t *testing.T, ns, name string) []string {
	t.Helper()
	d := get(t, deploymentGVR, ns, name)
	if d == nil {
		return nil
	}
	var owners []string
	for _, mf := range d.GetManagedFields() {
		if mf.FieldsV1 != nil && specReplicasOwned(mf.FieldsV1.Raw) {
			owners = append(owners, mf.Manager+"/"+mf.Subresource)
		}
	}
	return owners
}

// crossplaneOwns: Crossplane's composed-resource field manager is among
// owners.
func crossplaneOwns(owners []string) bool {
	for _, o := range owners {
		if strings.HasPrefix(o, "apiextensions.crossplane.io/composed/") {
			return true
		}
	}
	return false
}

// servingAtThree applies the seed at replicas 3, without a model cache, in
// namespace ns, whose KEDA triggers are active (the stand-in leaves a count
// above zero as it is), and waits until it is Ready; it returns the stack
// and the names of its engine Deployment, HPA and ScaledObject.
func servingAtThree(t *testing.T, ns string) (s *testStack, _, engine, hpa, so string) {
	t.Helper()
	ns = namespace(t, ns)
	keda.Serve(ns, true)
	t.Cleanup(func() { keda.Forget(ns) })
	s = applyStack(t, seed(t, ns, false, func(spec map[string]any) {
		noStorage(spec)
		spec["replicas"] = int64(3)
	}), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	m := s.name() + "-llama-3-2-1b-instruct"
	return s, ns, m + "-deployment-vllm", m + "-hpa", m + "-scaledobject"
}

// testHPAHandOver: the seed at replicas 3 turns on a HorizontalPodAutoscaler
// (minReplicas 1, maxReplicas 5; no metrics here, so the HPA holds the
// count it finds): the Deployment stays at 3 while the HPA comes and for
// four TTLs after (the function keeps sending 3: dropping it as the field's
// only owner would reset it to 1). minReplicas 4 makes the HPA write the
// count: the function drops the field, which only the HPA's scale
// subresource owns from then. Then the autoscaler becomes scaleToZero (a
// KEDA ScaledObject; the KEDA stand-in's triggers active, so it leaves the
// count): the HPA is deleted before the ScaledObject is made (Crossplane
// deletes in the foreground: the HPA may still be seen, being deleted, when
// the ScaledObject comes), and the count never goes below 3.
func testHPAHandOver(t *testing.T) {
	s, ns, engine, hpa, so := servingAtThree(t, "handover-hpa")

	w := watchReplicas(ns, engine)
	s.edit(t, func(spec map[string]any) {
		spec["autoscaling"] = map[string]any{"type": "hpa", "minReplicas": int64(1), "maxReplicas": int64(5)}
	})
	eventually(t, 2*time.Minute, "HorizontalPodAutoscaler "+hpa, func() (bool, string) {
		return get(t, hpaGVR, ns, hpa) != nil, "not yet"
	})
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at 3 beside its HPA", replicasAt(t, s, engine, 3))
	w.end(t, 3, "hpa on")
	t.Logf("Deployment %s: spec.replicas owned by %v while the HPA holds the count", engine, replicasOwners(t, ns, engine))

	s.edit(t, func(spec map[string]any) {
		spec["autoscaling"] = map[string]any{"type": "hpa", "minReplicas": int64(4), "maxReplicas": int64(5)}
	})
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at the HPA's 4, handed over", func() (bool, string) {
		if owners := replicasOwners(t, ns, engine); crossplaneOwns(owners) {
			return false, fmt.Sprintf("spec.replicas owned by %v", owners)
		}
		return replicasAt(t, s, engine, 4)()
	})

	w = watchReplicas(ns, engine)
	both := false
	s.edit(t, func(spec map[string]any) {
		delete(spec, "autoscaling")
		spec["scaleToZero"] = map[string]any{"maxReplicas": int64(5), "prometheusAddress": "http://prometheus-operated.monitoring:9090"}
	})
	eventually(t, 2*time.Minute, "the HPA replaced by ScaledObject "+so, func() (bool, string) {
		h, o := get(t, hpaGVR, ns, hpa), get(t, xp.ScaledObjectGVR, ns, so)
		both = both || h != nil && o != nil && h.GetDeletionTimestamp() == nil
		return h == nil && o != nil, fmt.Sprintf("HPA %v, ScaledObject %v", h != nil, o != nil)
	})
	if both {
		t.Errorf("the ScaledObject %s was made before the HPA %s was being deleted", so, hpa)
	}
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at 4 under its ScaledObject, the HPA gone", func() (bool, string) {
		if get(t, hpaGVR, ns, hpa) != nil {
			return false, "HPA " + hpa + " is back"
		}
		return replicasAt(t, s, engine, 4)()
	})
	w.end(t, 3, "hpa to scaleToZero")
}

// testScaleToZeroHandOver: the seed at replicas 3 turns on scaleToZero,
// the KEDA stand-in's triggers active (it leaves a count above zero): the
// Deployment stays at 3 while the ScaledObject comes, is Ready, and for
// four TTLs after. Then the triggers go idle: KEDA scales the Deployment to
// zero through the scale subresource, and the function, no longer an owner
// of the count, leaves it there. Then autoscaling becomes an HPA: the
// ScaledObject is deleted before the HPA is made, and the Deployment, at
// zero, where an HPA does not scale, gets the HPA's minReplicas (2) from
// the function.
func testScaleToZeroHandOver(t *testing.T) {
	s, ns, engine, hpa, so := servingAtThree(t, "handover-keda")

	w := watchReplicas(ns, engine)
	s.edit(t, func(spec map[string]any) {
		spec["scaleToZero"] = map[string]any{"maxReplicas": int64(5), "prometheusAddress": "http://prometheus-operated.monitoring:9090"}
	})
	eventually(t, 2*time.Minute, "ScaledObject "+so+" Ready", func() (bool, string) {
		u := get(t, xp.ScaledObjectGVR, ns, so)
		return u != nil && xp.Condition(u, "Ready") == "True", "not yet"
	})
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at 3 beside its ScaledObject", replicasAt(t, s, engine, 3))
	w.end(t, 3, "scaleToZero on")

	keda.Serve(ns, false)
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at zero, handed over to KEDA", func() (bool, string) {
		d := get(t, deploymentGVR, ns, engine)
		if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 0 {
			return false, fmt.Sprintf("spec.replicas %d, want 0", r)
		}
		if owners := replicasOwners(t, ns, engine); crossplaneOwns(owners) {
			return false, fmt.Sprintf("spec.replicas owned by %v", owners)
		}
		return true, ""
	})

	both := false
	s.edit(t, func(spec map[string]any) {
		delete(spec, "scaleToZero")
		spec["autoscaling"] = map[string]any{"type": "hpa", "minReplicas": int64(2), "maxReplicas": int64(5)}
	})
	eventually(t, 2*time.Minute, "the ScaledObject replaced by HPA "+hpa, func() (bool, string) {
		h, o := get(t, hpaGVR, ns, hpa), get(t, xp.ScaledObjectGVR, ns, so)
		both = both || h != nil && o != nil && o.GetDeletionTimestamp() == nil
		return h != nil && o == nil, fmt.Sprintf("HPA %v, ScaledObject %v", h != nil, o != nil)
	})
	if both {
		t.Errorf("the HPA %s was made before the ScaledObject %s was being deleted", hpa, so)
	}
	stable(t, 4*e2eTTL, 3*time.Minute, "Deployment "+engine+" at the HPA's 2", replicasAt(t, s, engine, 2))
}
