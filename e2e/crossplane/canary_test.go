//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// testCanaryPromote (issue 43 item 3): a one-model stack behind the router
// serves; a canary at weight 50 (revision v2) is added and becomes Ready
// beside it, one engine each; then promote. The model's Deployment rolls to
// v2 while the canary serves, and Crossplane deletes the canary's
// Deployment only after the model's is rolled and Available: a poll every
// 100 ms records when the model's Deployment was first seen rolled, when
// the canary's was first gone (or deleting), whether the model's name ever
// had no ready engine pod of either version, and whether the canary's
// Deployment changed while it served. The stack ends Ready with the model
// alone, at v2, status Promoted.
func testCanaryPromote(t *testing.T) {
	s := applyStack(t, seed(t, "canary", false, topologySeed), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	const model = "llama-3-2-1b-instruct"
	deployment, canary := s.name()+"-"+model+"-deployment-vllm", s.name()+"-"+model+"-canary-deployment-vllm"

	s.edit(t, func(spec map[string]any) {
		spec["model"].(map[string]any)["canary"] = map[string]any{"weight": int64(50), "revision": "v2"}
	})
	withCanary := s.expect()
	if len(withCanary.models) != 2 {
		t.Fatalf("expectation %v: want the model and its canary", withCanary.models)
	}
	s.waitReady(t, withCanary, 5*time.Minute)
	generation := get(t, deploymentGVR, s.ns(), deployment).GetGeneration()
	canaryGeneration := get(t, deploymentGVR, s.ns(), canary).GetGeneration()

	var (
		modelRolledAt, canaryGone time.Time
		noEngine                  []string
		canaryChanged             string
		pollErr                   error
	)
	stop := poll(func(ctx context.Context, now time.Time) {
		d, err := admin.Dynamic.Resource(deploymentGVR).Namespace(s.ns()).Get(ctx, deployment, metav1.GetOptions{})
		c, cerr := admin.Dynamic.Resource(deploymentGVR).Namespace(s.ns()).Get(ctx, canary, metav1.GetOptions{})
		gone := apierrors.IsNotFound(cerr) || (cerr == nil && c.GetDeletionTimestamp() != nil)
		pods, perr := admin.Dynamic.Resource(podGVR).Namespace(s.ns()).List(ctx, metav1.ListOptions{
			LabelSelector: labelInstance + "=" + s.name() + "," + labelComponent + "=serving-engine"})
		switch {
		case ctx.Err() != nil:
		case err != nil:
			pollErr = err
		case cerr != nil && !apierrors.IsNotFound(cerr):
			pollErr = cerr
		case perr != nil:
			pollErr = perr
		default:
			if d.GetGeneration() != generation && rolledOut(d) && modelRolledAt.IsZero() {
				modelRolledAt = now
			}
			if gone && canaryGone.IsZero() {
				canaryGone = now
			}
			if !gone && c.GetGeneration() != canaryGeneration && canaryChanged == "" {
				canaryChanged = fmt.Sprintf("generation %d at %s, was %d", c.GetGeneration(), now.Format("15:04:05.000"), canaryGeneration)
			}
			if ready := readyPods(pods.Items); ready == 0 && len(noEngine) < 5 {
				noEngine = append(noEngine, fmt.Sprintf("%s: no ready engine pod of %d", now.Format("15:04:05.000"), len(pods.Items)))
			}
		}
	})

	s.edit(t, func(spec map[string]any) {
		spec["model"].(map[string]any)["canary"].(map[string]any)["promote"] = true
	})
	promoted := s.expect()
	promoted.models = promoted.models[:1] // the canary is gone
	s.waitReady(t, promoted, 5*time.Minute)
	stop()

	if pollErr != nil {
		t.Fatalf("polling the workloads: %v", pollErr)
	}
	switch {
	case canaryGone.IsZero():
		t.Errorf("the canary's Deployment %s was never deleted", canary)
	case modelRolledAt.IsZero():
		t.Errorf("the model's Deployment %s was never seen rolled out", deployment)
	case canaryGone.Before(modelRolledAt):
		t.Errorf("the canary's Deployment %s was deleted at %s, before the model's %s was rolled out at %s", canary,
			canaryGone.Format("15:04:05.000"), deployment, modelRolledAt.Format("15:04:05.000"))
	default:
		t.Logf("the model's Deployment %s rolled out at %s, the canary's deleted %s later", deployment,
			modelRolledAt.Format("15:04:05.000"), canaryGone.Sub(modelRolledAt).Round(time.Millisecond))
	}
	if canaryChanged != "" {
		t.Errorf("the canary's Deployment %s changed while it served: %s", canary, canaryChanged)
	}
	if len(noEngine) > 0 {
		t.Errorf("the model had no ready engine pod during the promotion: %v", noEngine)
	}
	d := get(t, deploymentGVR, s.ns(), deployment)
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args"); !slices.Contains(args, "--revision=v2") {
		t.Errorf("the model runs %q, want --revision=v2", args)
	}
	models, _, _ := unstructured.NestedSlice(s.xr(t).Object, "status", "models")
	if v, _, _ := unstructured.NestedMap(models[0].(map[string]any), "version"); v["state"] != "Promoted" || num(v["share"], -1) != 100 {
		t.Errorf("status.models[0].version %v, want Promoted with share 100", v)
	}
}

// rolledOut: the Deployment controller has seen its spec, every replica
// runs it and is available.
func rolledOut(d *unstructured.Unstructured) bool {
	want, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	observed, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
	updated, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
	total, _, _ := unstructured.NestedInt64(d.Object, "status", "replicas")
	return observed >= d.GetGeneration() && updated == want && available == want && total == want
}

// testCanaryAbort (issue 43 item 3): a canary at weight 50 is added beside a
// serving model behind the router and becomes Ready; then the block is
// removed. Crossplane deletes every canary object, and the stack ends Ready
// with exactly the objects it had before the canary, each with the
// resourceVersion it had then: nothing of the model (nor the router)
// changed at any step.
func testCanaryAbort(t *testing.T) {
	s := applyStack(t, seed(t, "canary-abort", false, topologySeed), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	alone := s.expect()
	var before map[objRef]string
	stable(t, 3*time.Second, time.Minute, "the stack's objects settled", func() (bool, string) {
		if before == nil {
			before = s.snapshot(t)
			return false, "first snapshot"
		}
		ok, why := s.unchanged(t, before)
		if !ok {
			before = s.snapshot(t)
		}
		return ok, why
	})

	s.edit(t, func(spec map[string]any) {
		spec["model"].(map[string]any)["canary"] = map[string]any{"weight": int64(50), "revision": "v2"}
	})
	s.waitReady(t, s.expect(), 5*time.Minute)
	canary := s.name() + "-llama-3-2-1b-instruct-canary-deployment-vllm"
	if get(t, deploymentGVR, s.ns(), canary) == nil {
		t.Fatalf("no canary Deployment %s", canary)
	}
	now := s.snapshot(t)
	for r, b := range before {
		if now[r] != b {
			t.Errorf("adding the canary changed %s (resourceVersion %s -> %s)", r, rv(b), rv(now[r]))
		}
	}

	s.edit(t, func(spec map[string]any) { delete(spec["model"].(map[string]any), "canary") })
	s.waitReady(t, alone, 5*time.Minute)
	eventually(t, 2*time.Minute, "the objects of the model alone, unchanged since before the canary", func() (bool, string) {
		return s.unchanged(t, before)
	})
	if get(t, deploymentGVR, s.ns(), canary) != nil {
		t.Errorf("the canary Deployment %s is still there", canary)
	}
}
