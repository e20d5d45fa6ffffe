package fn

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// gieTopologyXR is topologyXR on the inference extension.
func gieTopologyXR() map[string]any {
	return topologyXR("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}})
}

// observedLayer is what Crossplane observes of rsp's desired resources, an
// InferencePool accepted by its Gateway when ready.
func observedLayer(t *testing.T, rsp *fnv1.RunFunctionResponse, ready func(key string) bool) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for k, r := range rsp.GetDesired().GetResources() {
		o := observedAs(t, k, r, ready(k))
		if o["kind"] == "InferencePool" && ready(k) {
			conds := []any{
				map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted"},
				map[string]any{"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs"},
			}
			o["status"] = map[string]any{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "gw"}, "conditions": conds}}}
		}
		out[k] = o
	}
	return out
}

// gieGroupsXR is groupsXR, a disaggregated model, on the inference
// extension.
func gieGroupsXR() map[string]any {
	return topologyXR("disaggregation", map[string]any{}, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}})
}

var (
	routerLayer    = []string{"router", "router-service", "router-serviceaccount", "router-role", "router-rolebinding"}
	extensionLayer = []string{"engine-m-httproute", "engine-m-inferencepool", "engine-m-epp", "engine-m-epp-service", "engine-m-epp-serviceaccount", "engine-m-epp-config", "engine-m-epp-role", "engine-m-epp-rolebinding"}
)

// TestRoutingLayerChanges: switching between the router and the inference
// extension keeps the old layer, as observed, until every object of the new
// one is ready (a pool accepted by its Gateway, a picker available, the
// router available), then drops it; meanwhile RouterReady says the old one
// serves.
func TestRoutingLayerChanges(t *testing.T) {
	for _, tc := range []struct {
		name           string
		from, to       func() map[string]any
		oldKeys, newKs []string
		note           string
	}{
		{"to the inference extension", plainXR, gieTopologyXR, routerLayer, extensionLayer,
			"moving to the inference extension: the router (Deployment s-deployment-router) keeps serving at its Service until every model's InferencePool is accepted by its Gateway and its endpoint picker is available"},
		{"to the router", gieTopologyXR, plainXR, extensionLayer, routerLayer,
			"moving to the router: the inference extension's pools keep serving through the Gateway until the router is available"},
		// A disaggregated model: one pool for its two groups.
		{"disaggregated, to the inference extension", groupsXR, gieGroupsXR, routerLayer, extensionLayer,
			"moving to the inference extension: the router (Deployment s-deployment-router) keeps serving at its Service until every model's InferencePool is accepted by its Gateway and its endpoint picker is available"},
		{"disaggregated, to the router", gieGroupsXR, groupsXR, extensionLayer, routerLayer,
			"moving to the router: the inference extension's pools keep serving through the Gateway until the router is available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := func(string) bool { return true }
			first := mustRun(t, req(t, tc.from(), nil, nil))
			a := mustRun(t, req(t, tc.from(), nil, observedLayer(t, first, all)))
			observed := observedLayer(t, a, all)

			// (b) The spec changes: the old layer stays as observed while
			// the new one is created and not ready.
			b := mustRun(t, req(t, tc.to(), nil, observed))
			for k, r := range b.GetDesired().GetResources() {
				if _, ok := observed[k]; !ok {
					observed[k] = observedLayer(t, &fnv1.RunFunctionResponse{Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{k: r}}}, func(string) bool { return false })[k]
				}
			}
			b = mustRun(t, req(t, tc.to(), nil, observed))
			for _, k := range tc.oldKeys {
				got, ok := b.GetDesired().GetResources()[k]
				if !ok {
					t.Errorf("(b): %s of the serving layer is not desired while the new layer is not ready", k)
					continue
				}
				if diff := cmp.Diff(a.GetDesired().GetResources()[k].GetResource(), got.GetResource(), protocmp.Transform()); diff != "" && k != "router-rolebinding" {
					t.Errorf("(b): %s is not kept as observed (-before +now):\n%s", k, diff)
				}
			}
			if c := conditionOfType(t, b, "RouterReady"); c.Status != condFalse || !strings.HasPrefix(c.Message, tc.note) {
				t.Errorf("(b) RouterReady = %+v, want False starting %q", c, tc.note)
			}

			// (c) The new layer is ready: the old one goes.
			for _, k := range tc.newKs {
				if r, ok := b.GetDesired().GetResources()[k]; ok {
					observed[k] = observedLayer(t, &fnv1.RunFunctionResponse{Desired: &fnv1.State{Resources: map[string]*fnv1.Resource{k: r}}}, all)[k]
				}
			}
			c := mustRun(t, req(t, tc.to(), nil, observed))
			for _, k := range tc.oldKeys {
				if _, ok := c.GetDesired().GetResources()[k]; ok && !slices.Contains(tc.newKs, k) {
					t.Errorf("(c): %s of the old layer is still desired once the new one is ready", k)
				}
			}
			if c := conditionOfType(t, c, "RouterReady"); c.Status != condTrue {
				t.Errorf("(c) RouterReady = %+v, want True", c)
			}
		})
	}
}
