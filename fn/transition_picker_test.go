package fn

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestTopologyChangesBehindPicker: turning disaggregation on or off behind
// the endpoint picker keeps the serving workload and, as the router keeps
// its logic, the model's pool and picker as observed (selector,
// configuration, the picker's pods) until the new workload is ready; then
// the new pool and picker are rendered, and the old workload goes once the
// picker is ready with them; finally the stack is what a fresh render of
// the new spec makes.
func TestTopologyChangesBehindPicker(t *testing.T) {
	pool := []string{"engine-m-inferencepool", "engine-m-epp-config", "engine-m-epp"}
	for _, tc := range []struct {
		name     string
		from, to func() map[string]any
		old, new []string
	}{
		{"disaggregation on", gieTopologyXR, gieGroupsXR, []string{"engine-m"}, []string{"engine-m-prefill", "engine-m-decode"}},
		{"disaggregation off", gieGroupsXR, gieTopologyXR, []string{"engine-m-prefill", "engine-m-decode"}, []string{"engine-m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observe := func(rsp *fnv1.RunFunctionResponse, k string, ready bool) map[string]any {
				r := rsp.GetDesired().GetResources()[k]
				return observedLayer(t, &fnv1.RunFunctionResponse{Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{k: r}}}, func(string) bool { return ready })[k]
			}
			all := func(string) bool { return true }
			first := mustRun(t, req(t, tc.from(), nil, nil))
			a := mustRun(t, req(t, tc.from(), nil, observedLayer(t, first, all)))
			observed := observedLayer(t, a, all)
			same := func(step string, rsp *fnv1.RunFunctionResponse, ks ...string) {
				t.Helper()
				for _, k := range ks {
					got, ok := rsp.GetDesired().GetResources()[k]
					if !ok {
						t.Errorf("%s: %s is not desired", step, k)
						continue
					}
					if diff := cmp.Diff(a.GetDesired().GetResources()[k].GetResource(), got.GetResource(), protocmp.Transform()); diff != "" {
						t.Errorf("%s: %s is not kept as observed (-before +now):\n%s", step, k, diff)
					}
				}
			}

			// (b) The spec changes: the new workload starts; the old one
			// serves through the old pool and picker.
			b := mustRun(t, req(t, tc.to(), nil, observed))
			for k := range b.GetDesired().GetResources() {
				if _, ok := observed[k]; !ok {
					observed[k] = observe(b, k, !slices.Contains(tc.new, k))
				}
			}
			b = mustRun(t, req(t, tc.to(), nil, observed))
			same("(b)", b, append(slices.Clone(tc.old), pool...)...)

			// (c) The new workload is ready: the new pool and picker are
			// rendered; the old workload serves until the picker is ready
			// with them.
			for _, k := range tc.new {
				observed[k] = observe(b, k, true)
			}
			c := mustRun(t, req(t, tc.to(), nil, observed))
			same("(c, the picker restarts)", c, tc.old...)
			for _, k := range pool {
				if cmp.Equal(a.GetDesired().GetResources()[k].GetResource(), c.GetDesired().GetResources()[k].GetResource(), protocmp.Transform()) {
					t.Errorf("(c): %s keeps the old topology's once the new workload is ready", k)
				}
				observed[k] = observe(c, k, true)
			}
			c = mustRun(t, req(t, tc.to(), nil, observed))
			for _, k := range tc.old {
				if _, ok := c.GetDesired().GetResources()[k]; ok {
					t.Errorf("(c): %s of the old topology is still desired once the picker runs the new one", k)
				}
			}

			// (d) The old objects are deleted: a fresh render's stack.
			checkSettled(t, c, tc.to(), observed)
		})
	}
}

// TestPickerPDStatus: a disaggregated model behind the picker is one model
// of the routing layer: the endpoint is the Gateway's /v1, which the model
// holds, and its own /m/v1, and the router
// status counts its one picker.
func TestPickerPDStatus(t *testing.T) {
	all := func(string) bool { return true }
	first := mustRun(t, req(t, gieGroupsXR(), nil, nil))
	rsp := mustRun(t, req(t, gieGroupsXR(), nil, observedLayer(t, first, all)))
	st := xrStatus(rsp)
	if got := st["endpoint"]; got != "gateway llm/gw /v1 (m), /m/v1" {
		t.Errorf("status.endpoint %v, want the Gateway's /v1 and /m/v1", got)
	}
	if diff := cmp.Diff(map[string]any{"routerType": "inference-extension", "replicas": float64(1), "readyReplicas": float64(1)}, st["router"]); diff != "" {
		t.Errorf("status.router (-want +got):\n%s", diff)
	}
}
