package e2e

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestConvertedStacks: the stacks helm2stack writes for the chart's
// scenarios (cmd/helm2stack/testdata/scenarios/*.stack.yaml, its goldens)
// are what the API server takes. Each passes the XRD, renders without a
// Fatal, and every object it composes passes a strict server-side dry-run
// apply, on the first reconcile and on the next (which adds the RoleBinding
// once the Role is observed).
func TestConvertedStacks(t *testing.T) {
	files, err := filepath.Glob("../cmd/helm2stack/testdata/scenarios/*.stack.yaml")
	if err != nil || len(files) < 17 {
		t.Fatalf("want the 17 converted scenario stacks, found %d (%v)", len(files), err)
	}
	ns := namespace(t, "converted")
	admin, _ := client(t, cp.Config())
	input := compositionInput(t, "../composition/composition.yaml")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".stack.yaml"), func(t *testing.T) {
			ctx := context.Background()
			xr := &unstructured.Unstructured{Object: readYAML(t, file)}
			xr.SetNamespace(ns)
			got, err := admin.Resource(xrGVR).Namespace(ns).Create(ctx, xr, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			if err != nil {
				t.Fatalf("the XRD refuses the converted stack: %v", err)
			}
			observed := map[string]*unstructured.Unstructured{}
			for pass := 1; pass <= 2; pass++ {
				rsp := render(t, got.Object, input, observed)
				for _, k := range desiredKeys(rsp) {
					o := composed(got, k, rsp.GetDesired().GetResources()[k])
					applied, err := apply(ctx, t, admin, o, composedFieldOwner(got), true)
					if err != nil {
						t.Errorf("reconcile %d: %s: the API server refuses it: %v", pass, k, err)
						continue
					}
					observed[k] = applied
				}
			}
			if observed["router-rolebinding"] == nil {
				t.Errorf("no RoleBinding on the second reconcile: composed %v", slices.Sorted(maps.Keys(observed)))
			}
		})
	}
}
