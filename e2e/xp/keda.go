package xp

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ScaledObjectGVR is KEDA v2.20.2's ScaledObject (its CRD, pinned in
// e2e/crds/go.mod, installed by InstallCRD).
var ScaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// A KEDA stands in for KEDA's operator, as far as the function can see it:
// no scaler queries a Prometheus here; a test says whether the triggers of
// a namespace's ScaledObjects report activity (Serve). For each
// ScaledObject whose scale target is a Deployment it does what KEDA v2.20
// does with that answer, through the Deployment's scale subresource (as
// KEDA's scale executor does; a scaled model's Deployment has no
// spec.replicas from the function): inactive, it sets the replicas to
// minReplicaCount (KEDA does so once the cooldown has passed since the
// triggers were last active; here at once); active at zero, to
// max(minReplicaCount, 1) (KEDA's HorizontalPodAutoscaler, which it does
// not create here, scales out from there). It writes the ScaledObject's
// status as KEDA does: the conditions Ready (ScaledObjectReady, or False
// ScaledObjectCheckFailed while the target does not exist), Active
// (ScalerActive or ScalerNotActive), Fallback (NoFallbackFound) and Paused
// (False), scaleTargetKind and scaleTargetGVKR, originalReplicaCount (the
// target's replicas when first seen) and lastActiveTime. It serves only the
// namespaces it is told to, every 500 ms until Stop.
type KEDA struct {
	*standIn[bool]
	k    *Kube
	logf func(string, ...any)
}

// StartKEDA starts the stand-in; it serves no namespace yet. Serve's mode
// says whether the namespace's triggers are active.
func StartKEDA(ctx context.Context, k *Kube, logf func(string, ...any)) *KEDA {
	s := &KEDA{k: k, logf: orNop(logf)}
	s.standIn = startStandIn(ctx, "keda", s.logf, s.sync)
	return s
}

// KEDA v2.20.2's condition reasons and messages
// (apis/keda/v1alpha1/condition_types.go, controllers/keda,
// pkg/scaling/executor).
const (
	kedaReadyMessage     = "ScaledObject is defined correctly and is ready for scaling"
	kedaActiveMessage    = "Scaling is performed because triggers are active"
	kedaNotActiveMessage = "Scaling is not performed because triggers are not active"
	kedaNoFallback       = "No fallbacks are active on this scaled object"
	kedaCheckFailed      = "ScaledObject doesn't have correct scaleTargetRef specification"
)

// sync scales the target of every ScaledObject of namespace ns and writes
// its status.
func (s *KEDA) sync(ctx context.Context, ns string, active bool) error {
	sos := s.k.Dynamic.Resource(ScaledObjectGVR).Namespace(ns)
	l, err := sos.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("cannot list ScaledObjects: %w", err)
	}
	var errs []string
	for i := range l.Items {
		so := &l.Items[i]
		if so.GetDeletionTimestamp() != nil {
			continue
		}
		if err := s.scale(ctx, so, active); err != nil {
			errs = append(errs, fmt.Sprintf("ScaledObject %s: %v", so.GetName(), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (s *KEDA) scale(ctx context.Context, so *unstructured.Unstructured, active bool) error {
	ref, _, _ := unstructured.NestedStringMap(so.Object, "spec", "scaleTargetRef")
	if k := ref["kind"]; k != "" && k != "Deployment" {
		return fmt.Errorf("scale target kind %s: the stand-in scales Deployments only", k)
	}
	minReplicas, found, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount")
	if !found {
		minReplicas = 0 // KEDA's default
	}
	deps := s.k.Dynamic.Resource(deploymentsGVR).Namespace(so.GetNamespace())
	status, _, _ := unstructured.NestedMap(so.Object, "status")
	want := map[string]any{}
	for k, v := range status {
		want[k] = v
	}
	prev, _, _ := unstructured.NestedSlice(so.Object, "status", "conditions")
	var conds []any
	sc, err := deps.Get(ctx, ref["name"], metav1.GetOptions{}, "scale")
	switch {
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("%s: deployments.apps %q not found", kedaCheckFailed, ref["name"])
		conds = []any{
			kedaCondition("Ready", "False", "ScaledObjectCheckFailed", msg),
			kedaCondition("Active", "Unknown", "UnknownState", "ScaledObject check failed"),
			kedaCondition("Fallback", "False", "NoFallbackFound", kedaNoFallback),
			pausedCondition(prev),
		}
	case err != nil:
		return err
	default:
		replicas, _, _ := unstructured.NestedInt64(sc.Object, "spec", "replicas")
		if _, ok := want["originalReplicaCount"]; !ok {
			want["originalReplicaCount"] = replicas
		}
		want["scaleTargetKind"] = "apps/v1.Deployment"
		want["scaleTargetGVKR"] = map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "resource": "deployments"}
		to := replicas
		if active {
			// KEDA sets it at every active poll; kept here while under
			// 10 s old, so the status is not rewritten every round.
			at, _ := status["lastActiveTime"].(string)
			if t, err := time.Parse(time.RFC3339, at); err != nil || time.Since(t) >= 10*time.Second {
				want["lastActiveTime"] = metav1.Now().UTC().Format(time.RFC3339)
			}
			if replicas == 0 {
				to = max(minReplicas, 1)
			}
		} else {
			to = minReplicas
		}
		if to != replicas {
			if err := unstructured.SetNestedField(sc.Object, to, "spec", "replicas"); err != nil {
				return err
			}
			if _, err := deps.Update(ctx, sc, metav1.UpdateOptions{FieldManager: "e2e-keda"}, "scale"); err != nil {
				if apierrors.IsConflict(err) {
					return nil // next round
				}
				return fmt.Errorf("cannot scale Deployment %s to %d: %w", ref["name"], to, err)
			}
			s.logf("keda: %s/%s: Deployment %s scaled from %d to %d (triggers active: %v)", so.GetNamespace(), so.GetName(), ref["name"], replicas, to, active)
		}
		activeCond := kedaCondition("Active", "False", "ScalerNotActive", kedaNotActiveMessage)
		if active {
			activeCond = kedaCondition("Active", "True", "ScalerActive", kedaActiveMessage)
		}
		conds = []any{
			kedaCondition("Ready", "True", "ScaledObjectReady", kedaReadyMessage),
			activeCond,
			kedaCondition("Fallback", "False", "NoFallbackFound", kedaNoFallback),
			pausedCondition(prev),
		}
	}
	want["conditions"] = conds
	if reflect.DeepEqual(status, want) {
		return nil
	}
	so.Object["status"] = want
	if _, err := s.k.Dynamic.Resource(ScaledObjectGVR).Namespace(so.GetNamespace()).UpdateStatus(ctx, so, metav1.UpdateOptions{FieldManager: "e2e-keda"}); err != nil &&
		!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot write its status: %w", err)
	}
	return nil
}

// kedaCondition is a KEDA condition (type, status, reason, message: KEDA's
// conditions have no times).
func kedaCondition(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
}

// pausedCondition is Paused False, as KEDA initializes it (no reason),
// keeping what was there while it is False.
func pausedCondition(prev []any) map[string]any {
	for _, c := range prev {
		if m, _ := c.(map[string]any); m["type"] == "Paused" && m["status"] == "False" {
			return m
		}
	}
	return map[string]any{"type": "Paused", "status": "False"}
}
