package fn

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestClusterRoleCoversComposedKinds: every kind the example stacks compose
// (their render goldens, example/golden) is granted to Crossplane by
// composition/clusterrole.yaml with every verb Crossplane uses on a composed
// resource. A kind missing there renders, passes the API server's checks,
// and then never reaches the cluster: Crossplane is forbidden to apply it
// (storage.prefetch's Job was, until batch/jobs was added).
func TestClusterRoleCoversComposedKinds(t *testing.T) {
	b, err := os.ReadFile("../composition/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Kind  string
		Rules []struct{ APIGroups, Resources, Verbs []string }
	}
	if err := yaml.Unmarshal([]byte(strings.Split(string(b), "\n---\n")[0]), &role); err != nil || role.Kind != "ClusterRole" {
		t.Fatalf("composition/clusterrole.yaml does not start with its ClusterRole: %v", err)
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	granted := func(group, resource, verb string) bool {
		return slices.ContainsFunc(role.Rules, func(r struct{ APIGroups, Resources, Verbs []string }) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	goldens, err := filepath.Glob("../example/golden/*.yaml")
	if err != nil || len(goldens) < 10 {
		t.Fatalf("example/golden has %d files (%v)", len(goldens), err)
	}
	kinds := map[string]bool{}
	for _, f := range goldens {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for doc := range strings.SplitSeq(string(b), "\n---\n") {
			var o struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			group, _, found := strings.Cut(o.APIVersion, "/")
			if !found {
				group = "" // the core group: apiVersion v1
			}
			if o.Kind == "" || group == "render.crossplane.io" || group == "serving.vllm.ai" {
				continue // render's results and the XR itself
			}
			kinds[group+" "+o.Kind] = true
		}
	}
	if len(kinds) < 15 {
		t.Fatalf("the goldens compose only %d kinds: %v", len(kinds), kinds)
	}
	for _, gk := range slices.Sorted(maps.Keys(kinds)) {
		group, kind, _ := strings.Cut(gk, " ")
		resource := plural(strings.ToLower(kind))
		for _, v := range verbs {
			if !granted(group, resource, v) {
				t.Errorf("composition/clusterrole.yaml does not let Crossplane %s %s (group %q, a kind the examples compose)", v, resource, group)
			}
		}
	}
}

// plural is the resource name of a kind, lowercased, as the API server
// names those the stack composes (policies, ingresses, deployments).
func plural(kind string) string {
	switch {
	case strings.HasSuffix(kind, "y"):
		return strings.TrimSuffix(kind, "y") + "ies"
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	}
	return kind + "s"
}
