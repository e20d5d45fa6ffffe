package kubecheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
)

// TestCRDCatchesOneRouteOfManyModels: the oracle refuses what the function
// rendered before issue 38, one HTTPRoute for every model behind the
// inference extension: with 17 models, 17 rules, more than Gateway API's
// CRD takes (maxItems 16), and a timeout of 100000m, more digits than its
// duration pattern takes; the route of one model passes.
func TestCRDCatchesOneRouteOfManyModels(t *testing.T) {
	route := func(models int, timeout string) map[string]any {
		r := inferencepool.Route{Name: "s-inference-route", Namespace: "llm", Parents: []inferencepool.ParentRef{{Name: "gw"}}, RequestTimeout: timeout}
		for i := range models {
			r.Rules = append(r.Rules, inferencepool.Rule{Pool: fmt.Sprintf("s-m%d-pool", i), PathPrefix: fmt.Sprintf("/m%d", i)})
		}
		return inferencepool.HTTPRoute(r).Object
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want []string // substrings of problems; none: no problem
	}{
		{"17 models", route(17, "10m"), []string{"spec.rules: Too many: 17: must have at most 16 items"}},
		{"a timeout of 100000m", route(1, "100000m"), []string{"spec.rules[0].timeouts.request: Invalid value: \"100000m\""}},
		{"16 models", route(16, "10m"), nil},
		{"one model, the longest timeout", route(1, "99999h"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CRDProblems(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if (len(got) == 0) != (len(tc.want) == 0) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("problems %q, want one with %q", got, w)
				}
			}
		})
	}
}

// TestCRDUnknownField: a field the CRD does not know is refused, as the
// API server refuses it with fieldValidation=Strict.
func TestCRDUnknownField(t *testing.T) {
	obj := inferencepool.HTTPRoute(inferencepool.Route{Name: "r", Namespace: "llm", Parents: []inferencepool.ParentRef{{Name: "gw"}},
		Rules: []inferencepool.Rule{{Pool: "p"}}}).Object
	obj["spec"].(map[string]any)["retries"] = int64(3)
	got, err := CRDProblems(obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"spec.retries: Invalid value: null: unknown field (fieldValidation=Strict refuses it; otherwise it is dropped)"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}
