//go:build e2e_crossplane

package crossplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// testScaleToZero: the seed (no model cache) with scaleToZero, on the
// router. KEDA's triggers report no activity (the KEDA stand-in, in the
// stack's namespace): the engine Deployment, whose spec.replicas the
// function does not send, goes to the ScaledObject's minReplicaCount 0
// through the scale subresource, and the stack is Ready with zero engine
// pods and 0/0 replicas, its ScaledObject Ready and not Active, EnginesReady
// saying the model is scaled to zero while idle and woken by the next
// request; that holds for four TTLs while Crossplane keeps calling the
// function (nothing puts the replicas back). The XR has the function's
// warning that the router does not hold requests while the model is at
// zero. Then the triggers report activity: the stand-in scales the
// Deployment to 1, the kubelet stand-in makes the pod Ready, and the stack
// is Ready with 1/1 replicas, EnginesReady saying nothing of zero.
func testScaleToZero(t *testing.T) {
	ns := namespace(t, "scale-to-zero")
	keda.Serve(ns, false)
	s := applyStack(t, seed(t, ns, false, func(spec map[string]any) {
		noStorage(spec)
		spec["scaleToZero"] = map[string]any{"maxReplicas": int64(2), "prometheusAddress": "http://prometheus-operated.monitoring:9090"}
	}), false)
	t.Cleanup(func() { keda.Forget(ns) })
	e := s.expect()
	if len(e.models) != 1 {
		t.Fatalf("%d models, want 1", len(e.models))
	}
	model := e.models[0].name
	engine := s.name() + "-llama-3-2-1b-instruct-deployment-vllm"
	so := s.name() + "-llama-3-2-1b-instruct-scaledobject"

	state := func(replicas int64, active, engines string) func() (bool, string) {
		e := s.expect()
		e.models[0].replicas = replicas
		return func() (bool, string) {
			var bad []string
			if ok, seen := s.readyState(t, e); !ok {
				bad = append(bad, seen)
			}
			if c := condition(s.xr(t), "EnginesReady"); c.Message != engines {
				bad = append(bad, fmt.Sprintf("EnginesReady %q, want %q", c.Message, engines))
			}
			if d := get(t, deploymentGVR, s.ns(), engine); d == nil {
				bad = append(bad, "no Deployment "+engine)
			} else if r, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); !found || r != replicas {
				bad = append(bad, fmt.Sprintf("Deployment %s spec.replicas %d, want %d", engine, r, replicas))
			}
			u := get(t, xp.ScaledObjectGVR, s.ns(), so)
			if u == nil {
				bad = append(bad, "no ScaledObject "+so)
			} else if xp.Condition(u, "Ready") != "True" || xp.Condition(u, "Active") != active {
				bad = append(bad, fmt.Sprintf("ScaledObject %s %s, want Ready True, Active %s", so, xp.Conditions(u), active))
			}
			return len(bad) == 0, strings.Join(bad, "; ")
		}
	}

	start := time.Now()
	calls := functionCalls(t)
	stable(t, 4*e2eTTL, 5*time.Minute, s.String()+" Ready at zero while idle",
		state(0, "False", "1/1 models ready; scaled to zero while idle, woken by the next request: "+model))
	t.Logf("%s Ready with zero engine pods for %s (%s after it was applied); EnginesReady: %s",
		s, 4*e2eTTL, time.Since(start).Round(100*time.Millisecond), condition(s.xr(t), "EnginesReady").Message)
	s.logStatus(t)
	if got := functionCalls(t); got <= calls {
		t.Errorf("the function was not called while the model was at zero (%v calls, was %v)", got, calls)
	}

	// The function's warning (a result Crossplane makes a Warning event,
	// prefixed with the pipeline step).
	eventually(t, time.Minute, s.String()+": the router warning", func() (bool, string) {
		evs := eventsOf(t, s.xr(t))
		return slices.ContainsFunc(evs, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Message, fmt.Sprintf("Pipeline step %q: ", pipelineStep)) &&
				strings.Contains(e.Message, "scaleToZero: the production-stack router does not hold requests: while the model is at zero the first requests get 503")
		}), formatEvents(evs)
	})

	// A request comes: KEDA wakes the model.
	keda.Serve(ns, true)
	woken := time.Now()
	stable(t, 3*e2eTTL, 5*time.Minute, s.String()+" Ready with 1/1 once woken", state(1, "True", "1/1 models ready"))
	t.Logf("%s Ready with 1/1 replicas %s after KEDA's triggers became active", s, time.Since(woken).Round(100*time.Millisecond))
}
