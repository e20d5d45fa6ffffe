package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCanary (issue 43 item 3): example/stacks/canary.yaml's canary through
// the API server and the Deployment controller. The model alone is applied
// (as Crossplane would: every object server-side applied, strictly); the
// canary is added: every canary object passes a strict dry-run and is
// applied, the route stored splits 90/10 across the two pools, and no
// object of the model changes (its Deployment's generation stays); abort
// (the block removed) composes exactly the objects of the model alone, byte
// for byte; the canary again, then promote: the model's Deployment takes a
// new generation, the canary's does not, and as the Deployment controller
// reports the model not yet rolled (no kubelet runs here), the canary stays
// composed.
func TestCanary(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "canary")
	admin, warned := client(t, cp.Config())
	input := compositionInput(t, "../composition/composition.yaml")
	manifest := readYAML(t, "../example/stacks/canary.yaml")
	canary, _, _ := unstructured.NestedMap(manifest, "spec", "model", "canary")
	unstructured.RemoveNestedField(manifest, "spec", "model", "canary")
	xr := &unstructured.Unstructured{Object: manifest}
	xr.SetNamespace(ns)
	xr, err := xrResource(admin, xr).Create(ctx, xr, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		t.Fatal(err)
	}
	fm := composedFieldOwner(xr)

	// reconcile renders the XR as stored over what is observed, applies
	// every desired object (a strict dry-run first), deletes what is no
	// longer desired, and returns the response and what is observed after.
	observed := map[string]*unstructured.Unstructured{}
	reconcile := func(step string, spec func(map[string]any)) *fnv1.RunFunctionResponse {
		t.Helper()
		cur, err := xrResource(admin, xr).Get(ctx, xr.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if spec != nil {
			spec(cur.Object)
			if cur, err = xrResource(admin, xr).Update(ctx, cur, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				t.Fatalf("%s: the API server rejects the XR: %v", step, err)
			}
		}
		rsp := render(t, cur.Object, input, observed)
		next := map[string]*unstructured.Unstructured{}
		for _, k := range desiredKeys(rsp) {
			u := composed(cur, k, rsp.GetDesired().GetResources()[k])
			if _, err := apply(ctx, t, admin, u, fm, true); err != nil {
				t.Fatalf("%s: server-side dry-run apply of %s (%s) is rejected: %v", step, describe(u), k, err)
			}
			noWarnings(t, warned, step+": dry-run apply of "+describe(u))
			o, err := apply(ctx, t, admin, u, fm, false)
			if err != nil {
				t.Fatalf("%s: apply of %s: %v", step, describe(u), err)
			}
			next[k] = o
		}
		for k, o := range observed {
			if next[k] == nil {
				if err := resourceFor(t, admin, o).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatalf("%s: delete %s: %v", step, describe(o), err)
				}
			}
		}
		for k, o := range next {
			// What Crossplane observes: the object as stored now, with
			// the controllers' status.
			got, err := resourceFor(t, admin, o).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %s: %v", step, k, err)
			}
			next[k] = got
		}
		observed = next
		return rsp
	}
	generation := func(key string) int64 { return observed[key].GetGeneration() }
	setCanary := func(c map[string]any) func(map[string]any) {
		return func(o map[string]any) {
			if c == nil {
				unstructured.RemoveNestedField(o, "spec", "model", "canary")
				return
			}
			if err := unstructured.SetNestedMap(o, c, "spec", "model", "canary"); err != nil {
				t.Fatal(err)
			}
		}
	}

	reconcile("model", nil)
	alone := reconcile("model, observed", nil) // with the RoleBindings
	modelGen := generation("engine-llama3")

	// Add: the canary's objects, the route 90/10; the model unchanged.
	added := reconcile("add", setCanary(canary))
	for _, k := range []string{"engine-llama3-canary", "engine-llama3-canary-service", "engine-llama3-canary-inferencepool", "engine-llama3-canary-epp"} {
		if observed[k] == nil {
			t.Errorf("add: %s is not composed: %v", k, desiredKeys(added))
		}
	}
	if g := generation("engine-llama3"); g != modelGen {
		t.Errorf("add: the model's Deployment went from generation %d to %d", modelGen, g)
	}
	refs, _, _ := unstructured.NestedSlice(observed["engine-llama3-httproute"].Object, "spec", "rules")
	backends := refs[0].(map[string]any)["backendRefs"].([]any)
	var split []string
	for _, b := range backends {
		m := b.(map[string]any)
		split = append(split, fmt.Sprint(m["name"], "=", m["weight"]))
	}
	if want := []string{"canary-llama3-pool=90", "canary-llama3-canary-pool=10"}; !slices.Equal(split, want) {
		t.Errorf("add: the stored route's backends %v, want %v", split, want)
	}
	sel, _, _ := unstructured.NestedStringMap(observed["engine-llama3-canary-inferencepool"].Object, "spec", "selector", "matchLabels")
	modelSel, _, _ := unstructured.NestedStringMap(observed["engine-llama3-inferencepool"].Object, "spec", "selector", "matchLabels")
	canaryPods, _, _ := unstructured.NestedStringMap(observed["engine-llama3-canary"].Object, "spec", "template", "metadata", "labels")
	if !selects(sel, canaryPods) || selects(modelSel, canaryPods) {
		t.Errorf("add: the canary's pods %v: the canary pool %v must select them and the model's %v must not", canaryPods, sel, modelSel)
	}

	// Abort: exactly the model alone again.
	aborted := reconcile("abort", setCanary(nil))
	if got, want := desiredKeys(aborted), desiredKeys(alone); !slices.Equal(got, want) {
		t.Fatalf("abort: keys %v, want %v", got, want)
	}
	for _, k := range desiredKeys(alone) {
		if !reflect.DeepEqual(alone.GetDesired().GetResources()[k].GetResource().AsMap(), aborted.GetDesired().GetResources()[k].GetResource().AsMap()) {
			t.Errorf("abort: %s differs from the model alone", k)
		}
	}
	if g := generation("engine-llama3"); g != modelGen {
		t.Errorf("abort: the model's Deployment went from generation %d to %d", modelGen, g)
	}

	// The canary again, then promote: the model rolls, the canary does not,
	// and stays while the controller reports the model not rolled.
	reconcile("add again", setCanary(canary))
	canaryGen := generation("engine-llama3-canary")
	promote := map[string]any{}
	for k, v := range canary {
		promote[k] = v
	}
	promote["promote"] = true
	reconcile("promote", setCanary(promote))
	promoting := reconcile("promoting, observed", nil)
	if g := generation("engine-llama3"); g == modelGen {
		t.Errorf("promote: the model's Deployment is still at generation %d", g)
	}
	if g := generation("engine-llama3-canary"); g != canaryGen {
		t.Errorf("promote: the canary's Deployment went from generation %d to %d", canaryGen, g)
	}
	if observed["engine-llama3-canary"] == nil || observed["engine-llama3-canary-inferencepool"] == nil {
		t.Errorf("promoting: the canary is gone before the model rolled: %v", desiredKeys(promoting))
	}
	img, _, _ := unstructured.NestedSlice(observed["engine-llama3"].Object, "spec", "template", "spec", "containers")
	if got := img[0].(map[string]any)["image"]; got != "docker.io/vllm/vllm-openai:v0.24.0" {
		t.Errorf("promote: the model runs %v, want the canary's image", got)
	}
}

// selects reports whether matchLabels sel selects a pod with labels l.
func selects(sel, l map[string]string) bool {
	for k, v := range sel {
		if l[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
