package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// gieXR is minimalXR on the inference extension.
func gieXR() map[string]any {
	return with("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "gws"}}})
}

// gieObserved is everything of a one-model stack on the extension ready,
// its pool accepted.
func gieObserved(kv ...any) map[string]map[string]any {
	return stacktest.Replaced(stacktest.ObservedExtension(), kv...)
}

// TestRoutingReady: on the inference extension RouterReady says whether
// every picker is available and every pool accepted by its Gateway, and
// why not; the pool's readiness follows its acceptance, so the stack is not
// Ready while no Gateway accepts it.
func TestRoutingReady(t *testing.T) {
	const noParent = "no Gateway has accepted InferencePool s-m-pool yet (its status names no parent): check that inferenceExtension.parentRefs names a Gateway whose implementation supports the inference extension, and that its HTTPRoute is attached"
	for name, tc := range map[string]struct {
		observed  map[string]map[string]any
		want      cond
		poolReady bool
	}{
		"Ready": {gieObserved(), cond{condTrue, "Available", "1/1 endpoint picker replicas ready; every model's InferencePool is accepted by its Gateway"}, true},
		"NoParent": {gieObserved("engine-m-inferencepool", stacktest.ObservedPool("s-m-pool")),
			cond{condFalse, "NotAccepted", noParent}, false},
		"NotAccepted": {gieObserved("engine-m-inferencepool", stacktest.ObservedPool("s-m-pool", [3]string{"Accepted", "False", "NotSupportedByGateway"}, [3]string{"ResolvedRefs", "True", "ResolvedRefs"})),
			cond{condFalse, "NotAccepted", "InferencePool s-m-pool is not accepted: Gateway gw: Accepted False: NotSupportedByGateway: m"}, false},
		"RefsNotResolved": {gieObserved("engine-m-inferencepool", stacktest.ObservedPool("s-m-pool", [3]string{"Accepted", "True", "Accepted"}, [3]string{"ResolvedRefs", "False", "InvalidExtensionRef"})),
			cond{condFalse, "NotAccepted", "InferencePool s-m-pool is not accepted: Gateway gw: ResolvedRefs False: InvalidExtensionRef: m"}, false},
		"PoolNotCreated": {gieObserved("engine-m-inferencepool", nil),
			cond{condFalse, "Creating", "InferencePool s-m-pool is not created yet"}, false},
		"PickerNotCreated": {gieObserved("engine-m-epp", nil),
			cond{condFalse, "Creating", "endpoint picker of m: Deployment s-m-epp is not created yet"}, true},
		"PickerUnavailable": {gieObserved("engine-m-epp", stacktest.ObservedDeployment("s-m-epp", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
			cond{condFalse, "Unavailable", "endpoint picker of m: 0/1 replicas available"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, gieXR(), nil, tc.observed))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionRouterReady)); diff != "" {
				t.Errorf("RouterReady (-want +got):\n%s", diff)
			}
			if got := rsp.ready["engine-m-inferencepool"]; got != tc.poolReady {
				t.Errorf("the pool's readiness %v, want %v", got, tc.poolReady)
			}
		})
	}
	st := mustRun(t, req(t, gieXR(), nil, gieObserved())).status
	if diff := cmp.Diff(map[string]any{"routerType": "inference-extension", "replicas": int64(1), "readyReplicas": int64(1)}, st.Fields()["router"]); diff != "" {
		t.Errorf("status.router (-want +got):\n%s", diff)
	}
	if got := st.Fields()["endpoint"]; got != "gateway gws/gw /v1 (m), /m/v1" {
		t.Errorf("status.endpoint %q", got)
	}
}
