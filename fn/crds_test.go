package fn

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestOptionalKindCRDs: a stack that composes a kind Kubernetes does not
// build in asks Crossplane for its CRD, and is refused, before anything is
// composed, once Crossplane found the CRD missing.
func TestOptionalKindCRDs(t *testing.T) {
	xr := onCluster(with("monitoring.serviceMonitor.enabled", true, "routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}))
	crd := func(name string) *fnv1.Resources { return crdFound(t, name) }

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

// crdFound is Crossplane's answer to a CRD requirement that found the CRD.
func crdFound(t *testing.T, name string) *fnv1.Resources {
	return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: toStruct(t, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": name}})}}}
}

// onCluster gives xr the UID an API server gives every object, so that the
// function takes the request for a cluster's, not a preview's.
func onCluster(xr map[string]any) map[string]any {
	setPath(xr, "metadata.uid", "4f9c3b52-6f0e-4c59-9a43-2b8e1d7a0c11")
	return xr
}

// TestPreviewAssumesCRDs: `crossplane render` answers a CRD requirement with
// nothing, which on a cluster means the CRD is missing. A request from render
// (an XR without a UID, or with the UID render makes up) composes the
// optional kinds with a warning per CRD it was not given; the same request
// with a cluster's UID is refused.
func TestPreviewAssumesCRDs(t *testing.T) {
	notFound := map[string]*fnv1.Resources{
		"crd-scaledobjects.keda.sh":                 {},
		"crd-servicemonitors.monitoring.coreos.com": {},
	}
	const (
		wantKEDA    = "preview: autoscaling.type keda composes a ScaledObject, shown as if the cluster had its CRD scaledobjects.keda.sh; on a cluster without it the stack is refused until KEDA is installed or autoscaling.type keda is off"
		wantMonitor = "preview: monitoring.serviceMonitor composes a ServiceMonitor, shown as if the cluster had its CRD servicemonitors.monitoring.coreos.com; on a cluster without it the stack is refused until the Prometheus Operator is installed or monitoring.serviceMonitor is off"
	)
	stack := func() map[string]any {
		return with("monitoring.serviceMonitor.enabled", true,
			"autoscaling", map[string]any{"type": "keda", "maxReplicas": 2, "prometheusAddress": "http://p:9090"})
	}
	cases := map[string]struct {
		uid      string
		required map[string]*fnv1.Resources
		want     []string
	}{
		"render without UID, requirements answered with nothing": {required: notFound, want: []string{wantKEDA, wantMonitor}},
		"render without UID, first call":                         {want: []string{wantKEDA, wantMonitor}},
		"render of core 2.3 and later (its made-up UID)": {
			uid:      renderUID("serving.vllm.ai/v1alpha1, Kind=ProductionStack", "llm", "s"),
			required: notFound, want: []string{wantKEDA, wantMonitor}},
		"render given one CRD (--required-resources)": {
			required: map[string]*fnv1.Resources{"crd-scaledobjects.keda.sh": crdFound(t, "scaledobjects.keda.sh"), "crd-servicemonitors.monitoring.coreos.com": {}},
			want:     []string{wantMonitor}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := stack()
			if tc.uid != "" {
				setPath(xr, "metadata.uid", tc.uid)
			}
			r := req(t, xr, nil, nil)
			r.RequiredResources = tc.required
			rsp := mustRun(t, r)
			var got []string
			for _, res := range rsp.GetResults() {
				if strings.HasPrefix(res.GetMessage(), "preview: ") {
					got = append(got, res.GetMessage())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("preview warnings (-want +got):\n%s", diff)
			}
			for _, key := range []string{engineMonitorKey, engineScaledObjectKey("m")} {
				if _, ok := rsp.GetDesired().GetResources()[key]; !ok {
					t.Errorf("%s is not composed in a preview", key)
				}
			}
		})
	}

	// The same answer on a cluster: refused.
	r := req(t, onCluster(stack()), nil, nil)
	r.RequiredResources = notFound
	const msg = "cannot compose the stack: autoscaling.type keda needs the ScaledObject CRD scaledobjects.keda.sh, which the cluster does not have: install KEDA, or turn autoscaling.type keda off; monitoring.serviceMonitor needs the ServiceMonitor CRD servicemonitors.monitoring.coreos.com, which the cluster does not have: install the Prometheus Operator, or turn monitoring.serviceMonitor off"
	if got := fatal(t, run(t, r)); got != msg {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, msg)
	}
}

// TestRenderUID: the UID Crossplane core's renderer gives an XR without one
// (internal/render/composite/render.go of crossplane v2.3.4: uuid.NewSHA1 of
// uuid.Nil and "<gvk>\x00<namespace>\x00<name>", gvk as apimachinery prints
// it), here for example/xr.yaml in namespace default. The want is a second
// implementation of that rule: python3 -c 'import uuid; print(uuid.uuid5(
// uuid.UUID(int=0), "serving.vllm.ai/v1alpha1, Kind=ProductionStack\x00default\x00test-stack"))'.
func TestRenderUID(t *testing.T) {
	got := renderUID("serving.vllm.ai/v1alpha1, Kind=ProductionStack", "default", "test-stack")
	if want := "a9fff7cb-e2b0-51b6-96b7-9e6ebeda7473"; got != want {
		t.Errorf("renderUID = %s, want %s", got, want)
	}
}

// TestMultiNodeRequirements: a multi-node model requires the LeaderWorkerSet
// CRD and, beside the leaders, its workers' pods; a missing CRD is refused.
func TestMultiNodeRequirements(t *testing.T) {
	xr := onCluster(with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2},
		"vllmConfig.tensorParallelSize", 2, "resources.gpu", "1", "storage.accessModes", []any{"ReadWriteMany"}))
	rsp := mustRun(t, req(t, xr, nil, nil))
	const crd = "leaderworkersets.leaderworkerset.x-k8s.io"
	var names []string
	for name := range rsp.GetRequirements().GetResources() {
		names = append(names, name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"crd-" + crd, "engine-pods", "engine-worker-pods", "router-pods"}, names); diff != "" {
		t.Errorf("requirements (-want +got):\n%s", diff)
	}
	workers := &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "Pod", Namespace: ptr.To("llm"),
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine-worker"}}}}
	if diff := cmp.Diff(workers, rsp.GetRequirements().GetResources()["engine-worker-pods"], protocmp.Transform()); diff != "" {
		t.Errorf("worker pods requirement (-want +got):\n%s", diff)
	}
	r := req(t, xr, nil, nil)
	r.RequiredResources = map[string]*fnv1.Resources{"crd-" + crd: nil}
	want := "cannot compose the stack: multiNode needs the LeaderWorkerSet CRD leaderworkersets.leaderworkerset.x-k8s.io, which the cluster does not have: install LeaderWorkerSet (kubernetes-sigs/lws), or turn multiNode off"
	if got := fatal(t, run(t, r)); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

// TestInferenceExtensionCRDs: a stack on the inference extension requires
// the InferencePool and HTTPRoute CRDs and, on a cluster without them, is
// refused naming inferenceExtension for both.
func TestInferenceExtensionCRDs(t *testing.T) {
	xr := onCluster(with("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}))
	r := req(t, xr, nil, nil)
	rsp := mustRun(t, r)
	for _, name := range []string{"inferencepools.inference.networking.k8s.io", "httproutes.gateway.networking.k8s.io"} {
		if _, ok := rsp.GetRequirements().GetResources()["crd-"+name]; !ok {
			t.Errorf("no requirement for the CRD %s", name)
		}
	}
	r.RequiredResources = map[string]*fnv1.Resources{
		"crd-inferencepools.inference.networking.k8s.io": {},
		"crd-httproutes.gateway.networking.k8s.io":       {},
	}
	want := "cannot compose the stack: inferenceExtension needs the InferencePool CRD inferencepools.inference.networking.k8s.io, which the cluster does not have: install the Gateway API Inference Extension's CRDs, or turn inferenceExtension off; " +
		"inferenceExtension needs the HTTPRoute CRD httproutes.gateway.networking.k8s.io, which the cluster does not have: install the Gateway API, or turn inferenceExtension off"
	if got := fatal(t, run(t, r)); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

// TestScaleToZeroCRD: a stack whose ScaledObject comes from scaleToZero is
// told to install KEDA or turn scaleToZero off, not a field it does not use.
func TestScaleToZeroCRD(t *testing.T) {
	xr := onCluster(with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"scaleToZero", map[string]any{"maxReplicas": 2, "prometheusAddress": "http://prometheus:9090"}))
	r := req(t, xr, nil, nil)
	r.RequiredResources = map[string]*fnv1.Resources{"crd-scaledobjects.keda.sh": {}}
	want := "cannot compose the stack: scaleToZero needs the ScaledObject CRD scaledobjects.keda.sh, which the cluster does not have: install KEDA, or turn scaleToZero off"
	if got := fatal(t, run(t, r)); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

// TestInferenceObjectiveCRD: a model's inferenceObjectives require the
// InferenceObjective CRD of the group the picker's release watches, and a
// stack without objectives does not; on a cluster without it the stack is
// refused naming it.
func TestInferenceObjectiveCRD(t *testing.T) {
	gie := func() map[string]any { return map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}} }
	objectives := []any{map[string]any{"name": "batch", "priority": -1}}
	const gaieCRD, llmdCRD = "inferenceobjectives.inference.networking.x-k8s.io", "inferenceobjectives.llm-d.ai"
	requires := func(rsp *fnv1.RunFunctionResponse) []string {
		var out []string
		for name := range rsp.GetRequirements().GetResources() {
			if strings.HasPrefix(name, "crd-inferenceobjectives.") {
				out = append(out, strings.TrimPrefix(name, "crd-"))
			}
		}
		return out
	}
	if got := requires(mustRun(t, req(t, onCluster(with("inferenceExtension", gie())), nil, nil))); len(got) != 0 {
		t.Errorf("no objectives: requires %v", got)
	}
	for image, crd := range map[string]string{
		"": llmdCRD, // llm-d v0.10.0, the default
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0":          gaieCRD,
		"registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0": gaieCRD,
	} {
		xr := onCluster(with("inferenceExtension", gie(), "model.inferenceObjectives", objectives))
		if image != "" {
			stacktest.SetPath(xr, "spec.inferenceExtension.picker", map[string]any{"image": image})
		}
		if diff := cmp.Diff([]string{crd}, requires(mustRun(t, req(t, xr, nil, nil)))); diff != "" {
			t.Errorf("%s: CRD requirements (-want +got):\n%s", image, diff)
		}
		r := req(t, xr, nil, nil)
		r.RequiredResources = map[string]*fnv1.Resources{
			"crd-inferencepools.inference.networking.k8s.io": crdFound(t, "inferencepools.inference.networking.k8s.io"),
			"crd-httproutes.gateway.networking.k8s.io":       crdFound(t, "httproutes.gateway.networking.k8s.io"),
			"crd-" + crd: {},
		}
		installer := "the Gateway API Inference Extension's CRDs of v1.5.0 or earlier (v1.6.0 dropped InferenceObjective)"
		if crd == llmdCRD {
			installer = "llm-d's CRDs (llm-d-router's config/crd)"
		}
		want := "cannot compose the stack: inferenceObjectives needs the InferenceObjective CRD " + crd + ", which the cluster does not have: install " + installer + ", or remove inferenceObjectives"
		if got := fatal(t, run(t, r)); got != want {
			t.Errorf("%s: Fatal message:\n got: %s\nwant: %s", image, got, want)
		}
	}
}
