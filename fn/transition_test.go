package fn

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The topology changes of issue 29: a model's workload changes kind or key
// (Deployment engine-m, LeaderWorkerSet engine-m-leaderworkerset, groups
// engine-m-prefill and engine-m-decode), and Crossplane deletes what the
// desired state drops. Each change is a sequence of RunFunction calls with
// the state Crossplane observes between them.

// topologyXR is minimalXR on releases that run every topology, with a
// ReadWriteMany cache unless accessModes says otherwise, changed by kv.
func topologyXR(kv ...any) map[string]any {
	return with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"storage.accessModes", []any{"ReadWriteMany"}}, kv...)...)
}

var (
	plainXR = func() map[string]any { return topologyXR() }
	lwsXR   = func() map[string]any {
		return topologyXR("multiNode", map[string]any{"podsPerReplica": 2}, "vllmConfig.pipelineParallelSize", 2)
	}
	groupsXR = func() map[string]any { return topologyXR("disaggregation", map[string]any{}) }
)

// observedAs is what Crossplane observes of a desired composed resource once
// applied: the object with what the API server adds (uid, resourceVersion,
// managedFields, annotations, generation) and a status, ready or not.
func observedAs(t *testing.T, key string, r *fnv1.Resource, ready bool) map[string]any {
	t.Helper()
	o := r.GetResource().AsMap()
	md := o["metadata"].(map[string]any)
	md["uid"] = "uid-" + key
	md["resourceVersion"] = "7"
	md["generation"] = float64(1)
	md["creationTimestamp"] = "2026-01-01T00:00:00Z"
	// The annotations applied, and those Crossplane and the controllers add.
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann["crossplane.io/composition-resource-name"] = key
	ann["deployment.kubernetes.io/revision"] = "1"
	md["annotations"] = ann
	md["managedFields"] = []any{map[string]any{"manager": "apiextensions.crossplane.io/composed", "operation": "Apply"}}
	md["ownerReferences"] = []any{map[string]any{"apiVersion": "serving.vllm.ai/v1alpha1", "kind": "ProductionStack", "name": "s", "uid": "xr"}}
	replicas := float64(1)
	if spec, ok := o["spec"].(map[string]any); ok {
		if n, ok := spec["replicas"].(float64); ok {
			replicas = n
		}
	}
	available := replicas
	if !ready {
		available = 0
	}
	truth := map[bool]string{true: "True", false: "False"}[ready]
	switch o["kind"] {
	case "Deployment":
		o["status"] = map[string]any{"observedGeneration": float64(1), "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": available, "availableReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": truth, "reason": "MinimumReplicas"}}}
	case "LeaderWorkerSet":
		o["status"] = map[string]any{"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": available,
			"conditions": []any{map[string]any{"type": "Available", "status": truth, "reason": "AllGroupsReady", "message": "", "observedGeneration": float64(1),
				"lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	case "PersistentVolumeClaim":
		o["status"] = map[string]any{"phase": "Bound"}
	}
	return o
}

// observeAll is what Crossplane observes of every desired resource of rsp;
// those of notReady not ready.
func observeAll(t *testing.T, rsp *fnv1.RunFunctionResponse, notReady ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for k, r := range rsp.GetDesired().GetResources() {
		out[k] = observedAs(t, k, r, !slices.Contains(notReady, k))
	}
	return out
}

func desiredKeys(rsp *fnv1.RunFunctionResponse) []string {
	ks := keys(rsp)
	slices.Sort(ks)
	return ks
}

// TestTopologyChanges: turning multiNode or disaggregation on or off keeps
// a serving workload and the weights. (a) the old topology serves; (b) the
// spec changes: the old workload stays in the desired state exactly as
// observed (nothing rolls it), with the objects it needs, the router keeps
// its logic, the new workload is created, and the status says the old one
// serves; (c) the new workload is ready: the old one goes, once the router
// runs the new logic where the logic changes; (d) the old one is gone: the
// stack is what a fresh render of the new spec is.
func TestTopologyChanges(t *testing.T) {
	cases := []struct {
		name     string
		from, to func() map[string]any
		old, new []string // workload keys
		// kept: objects of the old topology the new one drops, kept with
		// the old workload.
		kept         []string
		routerSwitch bool
		moving       string // the start of the new workload's message
	}{
		{name: "multiNode on", from: plainXR, to: lwsXR,
			old: []string{"engine-m"}, new: []string{"engine-m-leaderworkerset"},
			moving: "m: moving to a LeaderWorkerSet: the old workload (Deployment s-m-deployment-vllm) serves the model until the new one is ready; 0/1 groups ready"},
		{name: "multiNode off", from: lwsXR, to: plainXR,
			old: []string{"engine-m-leaderworkerset"}, new: []string{"engine-m"},
			moving: "m: moving to a Deployment: the old workload (LeaderWorkerSet s-m-lws) serves the model until the new one is ready; 0/1 replicas available"},
		{name: "disaggregation on", from: plainXR, to: groupsXR,
			old: []string{"engine-m"}, new: []string{"engine-m-prefill", "engine-m-decode"},
			kept: []string{"engine-m-service"}, routerSwitch: true,
			moving: "m (prefill): moving to prefill and decode Deployments: the old workload (Deployment s-m-deployment-vllm) serves the model until the new one is ready; 0/1 replicas available"},
		{name: "disaggregation off", from: groupsXR, to: plainXR,
			old: []string{"engine-m-prefill", "engine-m-decode"}, new: []string{"engine-m"},
			kept: []string{"engine-m-prefill-service", "engine-m-decode-service"}, routerSwitch: true,
			moving: "m: moving to a Deployment: the old workload (Deployment s-m-prefill-deployment-vllm and Deployment s-m-decode-deployment-vllm) serves the model until the new one is ready; 0/1 replicas available"},
		{name: "disaggregation on, ReadWriteOnce",
			from: func() map[string]any { return topologyXR("storage.accessModes", []any{"ReadWriteOnce"}) },
			to: func() map[string]any {
				return topologyXR("storage.accessModes", []any{"ReadWriteOnce"}, "disaggregation", map[string]any{})
			},
			old: []string{"engine-m"}, new: []string{"engine-m-prefill", "engine-m-decode"},
			kept: []string{"engine-m-service", "engine-m-storage"}, routerSwitch: true,
			moving: "m (prefill): moving to prefill and decode Deployments: the old workload (Deployment s-m-deployment-vllm) serves the model until the new one is ready"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// (a) The old topology, applied and ready.
			first := mustRun(t, req(t, tc.from(), nil, nil))
			a := mustRun(t, req(t, tc.from(), nil, observeAll(t, first)))
			observed := observeAll(t, a)
			if got := mustRun(t, req(t, tc.from(), nil, observed)); !cmp.Equal(desiredKeys(got), desiredKeys(a)) {
				t.Fatalf("(a) the old topology is not steady: %v, then %v", desiredKeys(a), desiredKeys(got))
			}
			sameAsBefore := func(step string, rsp *fnv1.RunFunctionResponse, ks ...string) {
				t.Helper()
				for _, k := range ks {
					got, ok := rsp.GetDesired().GetResources()[k]
					if !ok {
						t.Errorf("%s: %s is not desired; have %v", step, k, desiredKeys(rsp))
						continue
					}
					if diff := cmp.Diff(a.GetDesired().GetResources()[k].GetResource(), got.GetResource(), protocmp.Transform()); diff != "" {
						t.Errorf("%s: %s is not kept as observed (-before +now):\n%s", step, k, diff)
					}
				}
			}
			weights := func(step string, rsp *fnv1.RunFunctionResponse) {
				t.Helper()
				if _, ok := rsp.GetDesired().GetResources()["engine-m-storage"]; !ok {
					t.Errorf("%s: the model's claim engine-m-storage is not desired: the weights would be deleted", step)
				}
			}

			// (b) The spec changes; the old workload serves, the new one
			// is created, then observed not ready.
			b := mustRun(t, req(t, tc.to(), nil, observed))
			sameAsBefore("(b)", b, append(append(slices.Clone(tc.old), tc.kept...), "router")...)
			weights("(b)", b)
			for _, k := range tc.new {
				if _, ok := b.GetDesired().GetResources()[k]; !ok {
					t.Errorf("(b): the new workload %s is not desired", k)
				}
			}
			for k, r := range b.GetDesired().GetResources() {
				if _, ok := observed[k]; !ok {
					observed[k] = observedAs(t, k, r, !slices.Contains(tc.new, k))
				}
			}
			b2 := mustRun(t, req(t, tc.to(), nil, observed))
			sameAsBefore("(b, new workload starting)", b2, append(append(slices.Clone(tc.old), tc.kept...), "router")...)
			weights("(b, new workload starting)", b2)
			if c := conditionOfType(t, b2, "EnginesReady"); c.Status != condFalse || !strings.Contains(c.Message, tc.moving) {
				t.Errorf("(b) EnginesReady = %+v, want False saying %q", c, tc.moving)
			}
			routing := func(rsp *fnv1.RunFunctionResponse) any { return xrStatus(rsp)["router"].(map[string]any)["routerType"] }
			if got, want := routing(b2), routing(a); got != want {
				t.Errorf("(b) status.router.routerType %v, want the logic the router still runs, %v", got, want)
			}

			// (c) The new workload is ready.
			for _, k := range tc.new {
				observed[k] = observedAs(t, k, b2.GetDesired().GetResources()[k], true)
			}
			c := mustRun(t, req(t, tc.to(), nil, observed))
			weights("(c)", c)
			if tc.routerSwitch {
				// The router now runs the new logic; the old workload
				// serves until the router has rolled out.
				sameAsBefore("(c, the router rolls out)", c, append(slices.Clone(tc.old), tc.kept...)...)
				if cmp.Equal(a.GetDesired().GetResources()["router"].GetResource(), c.GetDesired().GetResources()["router"].GetResource(), protocmp.Transform()) {
					t.Errorf("(c): the router keeps the old topology's logic once the new workload is ready")
				}
				observed["router"] = observedAs(t, "router", c.GetDesired().GetResources()["router"], true)
				c = mustRun(t, req(t, tc.to(), nil, observed))
			} else {
				sameAsBefore("(c)", c, "router")
			}
			for _, k := range append(slices.Clone(tc.old), tc.kept...) {
				if _, ok := c.GetDesired().GetResources()[k]; ok {
					t.Errorf("(c): %s of the old topology is still desired once the new one serves", k)
				}
			}
			if c := conditionOfType(t, c, "EnginesReady"); c.Status != condTrue {
				t.Errorf("(c) EnginesReady = %+v, want True", c)
			}

			// (d) Crossplane deleted the old objects: the stack is the new
			// spec's, as a fresh render of it makes it.
			d := checkSettled(t, c, tc.to(), observed)
			if len(tc.kept) == 0 || tc.kept[len(tc.kept)-1] != "engine-m-storage" {
				weights("(d)", d)
			}
		})
	}
}

// checkSettled is step (d) of a topology change: Crossplane deleted from
// observed what c no longer desires, and the next call's stack is what a
// fresh render of the new spec to makes, object for object; it returns
// that call's response.
func checkSettled(t *testing.T, c *fnv1.RunFunctionResponse, to map[string]any, observed map[string]map[string]any) *fnv1.RunFunctionResponse {
	t.Helper()
	for k := range observed {
		if _, ok := c.GetDesired().GetResources()[k]; !ok {
			delete(observed, k)
		}
	}
	d := mustRun(t, req(t, to, nil, observed))
	fresh := mustRun(t, reconciledRequest(t, to, nil))
	if diff := cmp.Diff(desiredKeys(fresh), desiredKeys(d)); diff != "" {
		t.Errorf("(d) objects differ from a fresh render (-fresh +got):\n%s", diff)
	}
	for k, r := range fresh.GetDesired().GetResources() {
		if diff := cmp.Diff(r.GetResource(), d.GetDesired().GetResources()[k].GetResource(), protocmp.Transform()); diff != "" {
			t.Errorf("(d) %s differs from a fresh render (-fresh +got):\n%s", k, diff)
		}
	}
	return d
}
