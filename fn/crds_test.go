package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestOptionalKindCRDs: a stack that composes a kind Kubernetes does not
// build in asks Crossplane for its CRD, and is refused, before anything is
// composed, once Crossplane found the CRD missing.
func TestOptionalKindCRDs(t *testing.T) {
	xr := with("monitoring.serviceMonitor.enabled", true, "routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}})
	crd := func(name string) *fnv1.Resources {
		return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: toStruct(t, map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": name}})}}}
	}

	// Not looked for yet (the first call, or crossplane render): composed,
	// and the CRDs are required.
	rsp := mustRun(t, req(t, xr, nil, nil))
	for _, name := range []string{"servicemonitors.monitoring.coreos.com", "httproutes.gateway.networking.k8s.io"} {
		want := &fnv1.ResourceSelector{ApiVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Match: &fnv1.ResourceSelector_MatchName{MatchName: name}}
		if diff := cmp.Diff(want, rsp.GetRequirements().GetResources()["crd-"+name], protocmp.Transform()); diff != "" {
			t.Errorf("requirement for %s (-want +got):\n%s", name, diff)
		}
	}
	if _, ok := rsp.GetDesired().GetResources()[engineMonitorKey]; !ok {
		t.Errorf("the ServiceMonitor is composed before Crossplane looked for its CRD")
	}

	// Both found: composed.
	r := req(t, xr, nil, nil)
	r.RequiredResources = map[string]*fnv1.Resources{
		"crd-servicemonitors.monitoring.coreos.com": crd("servicemonitors.monitoring.coreos.com"),
		"crd-httproutes.gateway.networking.k8s.io":  crd("httproutes.gateway.networking.k8s.io"),
	}
	mustRun(t, r)

	// One missing (Crossplane sends the requirement with no items): refused.
	r.RequiredResources["crd-servicemonitors.monitoring.coreos.com"] = nil
	want := "cannot compose the stack: monitoring.serviceMonitor needs the ServiceMonitor CRD servicemonitors.monitoring.coreos.com, which the cluster does not have: install the Prometheus Operator, or turn monitoring.serviceMonitor off"
	if got := fatal(t, run(t, r)); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}

	// Without the options nothing is required but the pods.
	plain := mustRun(t, req(t, minimalXR(), nil, nil))
	for name := range plain.GetRequirements().GetResources() {
		if name != enginePodsRequirement && name != routerPodsRequirement {
			t.Errorf("a stack without optional kinds requires %s", name)
		}
	}
}
