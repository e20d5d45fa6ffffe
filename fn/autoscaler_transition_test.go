package fn

import (
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
)

// The autoscaler switches of issue 38: a model's autoscaler changes kind
// (HorizontalPodAutoscaler engine-m-hpa, ScaledObject engine-m-scaledobject),
// comes or goes, and the Deployment's spec.replicas changes owner. Each
// switch is the sequence of RunFunction calls Crossplane makes, with what it
// observes between them, every request passed through the codec's pruning
// as the gRPC server does (managedFields' owners of spec.replicas survive it).

// Field managers of a Deployment's spec.replicas: Crossplane's apply of
// composed objects, and an autoscaler's writes through the scale subresource.
const (
	crossplaneManager = "apiextensions.crossplane.io/composed/5ef3c9a1"
	scaleManager      = "kube-controller-manager"
)

var (
	autoscalingOffXR = func() map[string]any { return topologyXR("replicas", 3) }
	hpaXR            = func() map[string]any {
		return topologyXR("replicas", 3, "autoscaling", map[string]any{"type": "hpa", "minReplicas": 2, "maxReplicas": 6})
	}
	kedaXR = func() map[string]any {
		return topologyXR("replicas", 3, "autoscaling", map[string]any{"maxReplicas": 6, "prometheusAddress": "http://p:9090"})
	}
	scaleToZeroXR = func() map[string]any {
		return topologyXR("replicas", 3, "scaleToZero", map[string]any{"maxReplicas": 6, "prometheusAddress": "http://p:9090"})
	}
)

// ownReplicas makes the observed Deployment's spec.replicas n, owned by the
// field managers given.
func ownReplicas(d map[string]any, n float64, managers ...string) {
	d["spec"].(map[string]any)["replicas"] = n
	var mf []any
	for _, m := range managers {
		e := map[string]any{"manager": m, "operation": "Apply", "apiVersion": "apps/v1",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:template": map[string]any{}}}}
		if m == scaleManager {
			e["operation"], e["subresource"] = "Update", "scale"
		}
		mf = append(mf, e)
	}
	d["metadata"].(map[string]any)["managedFields"] = mf
}

// readyAutoscalers marks the observed ScaledObjects Ready, as KEDA does.
func readyAutoscalers(observed map[string]map[string]any) {
	for _, o := range observed {
		if o["kind"] == "ScaledObject" {
			o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
		}
	}
}

// prunedRun runs the function on r as the gRPC server decodes it.
func prunedRun(t *testing.T, r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = wire.PruneRequest(b); err != nil {
		t.Fatal(err)
	}
	pr := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(b, pr); err != nil {
		t.Fatal(err)
	}
	return mustRun(t, pr)
}

// sentReplicas is the desired Deployment's spec.replicas, -1 when not sent.
func sentReplicas(t *testing.T, rsp *fnv1.RunFunctionResponse, key string) float64 {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		t.Fatalf("no %s desired", key)
	}
	n, ok := r.GetResource().AsMap()["spec"].(map[string]any)["replicas"].(float64)
	if !ok {
		return -1
	}
	return n
}

// gc is what Crossplane observes after applying rsp: what it no longer
// desires deleted, what it newly desires created (not ready).
func gc(t *testing.T, rsp *fnv1.RunFunctionResponse, observed map[string]map[string]any) {
	t.Helper()
	for k := range observed {
		if _, ok := rsp.GetDesired().GetResources()[k]; !ok {
			delete(observed, k)
		}
	}
	for k, r := range rsp.GetDesired().GetResources() {
		if _, ok := observed[k]; !ok {
			observed[k] = observedAs(t, k, r, false)
		}
	}
}

// TestAutoscalerSwitches: (a) the old configuration serves, its Deployment
// at 3 replicas owned by the function (no autoscaler) or by the autoscaler;
// (b) the spec changes: the old autoscaler leaves the desired state, a new
// one of another kind is withheld while the old is observed, and the
// Deployment keeps 3 replicas if the function owned them (an HPA taking
// over a Deployment at zero gets minReplicas); (c) Crossplane has deleted
// the old autoscaler: the new one is composed, the Deployment still keeps
// its count; (d) the new autoscaler is ready but has not written the count
// (it holds already): the function keeps sending it, since dropping it as
// its only owner would reset it to 1; (e) the autoscaler has written the
// count: the function drops the field. Turning autoscaling off sends the
// manifest's replicas in (b).
func TestAutoscalerSwitches(t *testing.T) {
	cases := []struct {
		name        string
		from, to    func() map[string]any
		observedAt  float64 // the Deployment's count in (a)
		old, new    string  // autoscaler keys
		withheld    bool    // the new autoscaler waits for the old one
		wantB       float64 // replicas sent in (b) and (c); -1 not sent
		handingOver bool    // (d) and (e) apply
	}{
		{name: "hpa on", from: autoscalingOffXR, to: hpaXR, observedAt: 3, new: "engine-m-hpa", wantB: 3, handingOver: true},
		{name: "keda on", from: autoscalingOffXR, to: kedaXR, observedAt: 3, new: "engine-m-scaledobject", wantB: 3, handingOver: true},
		{name: "scaleToZero on", from: autoscalingOffXR, to: scaleToZeroXR, observedAt: 3, new: "engine-m-scaledobject", wantB: 3, handingOver: true},
		{name: "keda to hpa", from: kedaXR, to: hpaXR, observedAt: 4, old: "engine-m-scaledobject", new: "engine-m-hpa", withheld: true, wantB: -1},
		{name: "hpa to keda", from: hpaXR, to: kedaXR, observedAt: 4, old: "engine-m-hpa", new: "engine-m-scaledobject", withheld: true, wantB: -1},
		{name: "scaleToZero at zero to hpa", from: scaleToZeroXR, to: hpaXR, observedAt: 0, old: "engine-m-scaledobject", new: "engine-m-hpa", withheld: true, wantB: 2},
		{name: "hpa to scaleToZero", from: hpaXR, to: scaleToZeroXR, observedAt: 4, old: "engine-m-hpa", new: "engine-m-scaledobject", withheld: true, wantB: -1},
		{name: "scaleToZero to keda", from: scaleToZeroXR, to: kedaXR, observedAt: 0, old: "engine-m-scaledobject", new: "engine-m-scaledobject", wantB: -1},
		{name: "hpa off", from: hpaXR, to: autoscalingOffXR, observedAt: 5, old: "engine-m-hpa", wantB: 3},
		{name: "scaleToZero off", from: scaleToZeroXR, to: autoscalingOffXR, observedAt: 0, old: "engine-m-scaledobject", wantB: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// (a)
			observed := observeAll(t, mustRun(t, reconciledRequest(t, tc.from(), nil)))
			readyAutoscalers(observed)
			owner := crossplaneManager
			if tc.old != "" {
				owner = scaleManager
				if _, ok := observed[tc.old]; !ok {
					t.Fatalf("(a) no %s observed: %v", tc.old, slices.Sorted(maps.Keys(observed)))
				}
			}
			ownReplicas(observed["engine-m"], tc.observedAt, owner)

			// (b)
			b := prunedRun(t, req(t, tc.to(), nil, observed))
			ks := keys(b)
			if tc.old != "" && tc.old != tc.new && slices.Contains(ks, tc.old) {
				t.Errorf("(b) the old autoscaler %s is still desired", tc.old)
			}
			if tc.new != "" && slices.Contains(ks, tc.new) == tc.withheld {
				t.Errorf("(b) %s desired: %v, want %v (withheld while %s is observed)", tc.new, !tc.withheld, tc.withheld, tc.old)
			}
			if got := sentReplicas(t, b, "engine-m"); got != tc.wantB {
				t.Errorf("(b) spec.replicas %v, want %v", got, tc.wantB)
			}
			if tc.wantB >= 0 {
				// Crossplane's apply makes the function an owner again.
				ownReplicas(observed["engine-m"], tc.wantB, crossplaneManager)
			}

			// (c)
			gc(t, b, observed)
			c := prunedRun(t, req(t, tc.to(), nil, observed))
			if tc.new != "" && !slices.Contains(keys(c), tc.new) {
				t.Errorf("(c) %s not desired once the old autoscaler is gone", tc.new)
			}
			if got := sentReplicas(t, c, "engine-m"); got != tc.wantB {
				t.Errorf("(c) spec.replicas %v, want %v", got, tc.wantB)
			}
			if !tc.handingOver {
				return
			}

			// (d)
			gc(t, c, observed)
			observed[tc.new] = observedAs(t, tc.new, c.GetDesired().GetResources()[tc.new], true)
			readyAutoscalers(observed)
			d := prunedRun(t, req(t, tc.to(), nil, observed))
			if got := sentReplicas(t, d, "engine-m"); got != 3 {
				t.Errorf("(d) the autoscaler is ready and never wrote the count: spec.replicas %v, want 3 (dropping it would reset it to 1)", got)
			}

			// (e)
			ownReplicas(observed["engine-m"], 3, crossplaneManager, scaleManager)
			e := prunedRun(t, req(t, tc.to(), nil, observed))
			if got := sentReplicas(t, e, "engine-m"); got != -1 {
				t.Errorf("(e) the autoscaler owns the count too: spec.replicas %v sent, want none", got)
			}
			ownReplicas(observed["engine-m"], 4, scaleManager)
			if got := sentReplicas(t, prunedRun(t, req(t, tc.to(), nil, observed)), "engine-m"); got != -1 {
				t.Errorf("(e) the autoscaler alone owns the count: spec.replicas %v sent, want none", got)
			}
		})
	}
}

// TestRouterReplicasHandOver: the router's HorizontalPodAutoscaler takes
// spec.replicas over as a model's does.
func TestRouterReplicasHandOver(t *testing.T) {
	from := func() map[string]any { return topologyXR("routerConfig.replicas", 3) }
	to := func() map[string]any {
		return topologyXR("routerConfig.replicas", 3, "routerConfig.autoscaling", map[string]any{"maxReplicas": 5})
	}
	observed := observeAll(t, mustRun(t, reconciledRequest(t, from(), nil)))
	ownReplicas(observed["router"], 3, crossplaneManager)
	for step, want := range []float64{3, 3, -1} {
		rsp := prunedRun(t, req(t, to(), nil, observed))
		if got := sentReplicas(t, rsp, "router"); got != want {
			t.Errorf("step %d: router spec.replicas %v, want %v", step, got, want)
		}
		gc(t, rsp, observed)
		switch step {
		case 0: // the HPA exists (ready once it does) but has not written the count
		case 1:
			ownReplicas(observed["router"], 3, crossplaneManager, scaleManager)
		}
	}
	if _, ok := observed["router-autoscaler"]; !ok {
		t.Errorf("no router-autoscaler composed")
	}
}
