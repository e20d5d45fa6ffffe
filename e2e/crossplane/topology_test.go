//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var lwsGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// topologySeed is the seed made fit for multiNode: a vLLM with the
// multi-node flags, a cache every node can mount, rolling updates.
func topologySeed(spec map[string]any) {
	delete(spec, "deploymentStrategy")
	spec["vllmConfig"].(map[string]any)["image"] = "vllm/vllm-openai:v0.12.0"
	delete(spec["vllmConfig"].(map[string]any), "v1")
	spec["storage"] = map[string]any{"accessModes": []any{"ReadWriteMany"}}
}

// testMultiNodeOn (issue 29): a one-model stack serves from its Deployment;
// multiNode is turned on. The function keeps the Deployment until the
// LeaderWorkerSet is ready, then Crossplane deletes it: a poll every 100 ms
// records when the LeaderWorkerSet was first ready, when the Deployment was
// first gone (or deleting), and whether the model ever had no ready engine
// pod, or a change to the Deployment (kept as observed, it must not roll).
// The stack ends Ready with the LeaderWorkerSet and no Deployment, and
// the model cache claim is the one it had.
func testMultiNodeOn(t *testing.T) {
	s := applyStack(t, seed(t, "topology", false, topologySeed), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	const model = "llama-3-2-1b-instruct"
	deployment, lws, claim := s.name()+"-"+model+"-deployment-vllm", s.name()+"-"+model+"-lws", s.name()+"-"+model+"-storage-claim"
	claimUID := get(t, pvcGVR, s.ns(), claim).GetUID()
	generation := get(t, deploymentGVR, s.ns(), deployment).GetGeneration()

	var (
		lwsReadyAt, deploymentGone time.Time
		noEngine                   []string
		rolled                     string
		pollErr                    error
	)
	stop := poll(func(ctx context.Context, now time.Time) {
		d, err := admin.Dynamic.Resource(deploymentGVR).Namespace(s.ns()).Get(ctx, deployment, metav1.GetOptions{})
		gone := apierrors.IsNotFound(err) || (err == nil && d.GetDeletionTimestamp() != nil)
		l, lerr := admin.Dynamic.Resource(lwsGVR).Namespace(s.ns()).Get(ctx, lws, metav1.GetOptions{})
		lwsReady := lerr == nil && lwsAvailable(l)
		pods, perr := admin.Dynamic.Resource(podGVR).Namespace(s.ns()).List(ctx, metav1.ListOptions{
			LabelSelector: labelInstance + "=" + s.name() + "," + labelComponent + "=serving-engine," + labelModel + "=Llama-3.2-1B-Instruct"})
		switch {
		case ctx.Err() != nil:
		case err != nil && !apierrors.IsNotFound(err):
			pollErr = err
		case lerr != nil && !apierrors.IsNotFound(lerr):
			pollErr = lerr
		case perr != nil:
			pollErr = perr
		default:
			if lwsReady && lwsReadyAt.IsZero() {
				lwsReadyAt = now
			}
			if gone && deploymentGone.IsZero() {
				deploymentGone = now
			}
			if !gone && err == nil && d.GetGeneration() != generation && rolled == "" {
				// (Deleting bumps the generation: only before.)
				rolled = fmt.Sprintf("generation %d at %s, was %d", d.GetGeneration(), now.Format("15:04:05.000"), generation)
			}
			if ready := readyPods(pods.Items); ready == 0 && len(noEngine) < 5 {
				noEngine = append(noEngine, fmt.Sprintf("%s: no ready engine pod of %d", now.Format("15:04:05.000"), len(pods.Items)))
			}
		}
	})

	s.edit(t, func(spec map[string]any) {
		spec["multiNode"] = map[string]any{"podsPerReplica": int64(2)}
		spec["vllmConfig"].(map[string]any)["pipelineParallelSize"] = int64(2)
	})
	s.waitReady(t, s.expect(), 5*time.Minute)
	stop()

	if pollErr != nil {
		t.Fatalf("polling the workloads: %v", pollErr)
	}
	switch {
	case deploymentGone.IsZero():
		t.Errorf("Deployment %s was never deleted", deployment)
	case lwsReadyAt.IsZero():
		t.Errorf("LeaderWorkerSet %s was never seen ready", lws)
	case deploymentGone.Before(lwsReadyAt):
		t.Errorf("Deployment %s was deleted at %s, before LeaderWorkerSet %s was ready at %s", deployment,
			deploymentGone.Format("15:04:05.000"), lws, lwsReadyAt.Format("15:04:05.000"))
	default:
		t.Logf("LeaderWorkerSet %s ready at %s, Deployment %s deleted %s later", lws, lwsReadyAt.Format("15:04:05.000"),
			deployment, deploymentGone.Sub(lwsReadyAt).Round(time.Millisecond))
	}
	if rolled != "" {
		t.Errorf("Deployment %s was changed while it served as the old workload: %s", deployment, rolled)
	}
	if len(noEngine) > 0 {
		t.Errorf("the model had no ready engine pod during the change: %v", noEngine)
	}
	if get(t, deploymentGVR, s.ns(), deployment) != nil {
		t.Errorf("Deployment %s still exists", deployment)
	}
	if get(t, lwsGVR, s.ns(), lws) == nil {
		t.Errorf("no LeaderWorkerSet %s", lws)
	}
	if c := get(t, pvcGVR, s.ns(), claim); c == nil || c.GetUID() != claimUID {
		t.Errorf("the model cache claim %s was replaced or deleted (uid %v, was %s): the weights would be downloaded again", claim, c, claimUID)
	}
}

// lwsAvailable: every group ready and the controller says Available, as
// the function's status reads it.
func lwsAvailable(l *unstructured.Unstructured) bool {
	want, found, _ := unstructured.NestedInt64(l.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	ready, _, _ := unstructured.NestedInt64(l.Object, "status", "readyReplicas")
	conds, _, _ := unstructured.NestedSlice(l.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
			return ready >= want && m["status"] == "True"
		}
	}
	return false
}
