package transition

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/stack/build"
)

// keptObject is the observed object of k, to compose again as it is: not in
// desired, of k's kind, with a name. Only what its owner set is kept: its
// kind, name, namespace, labels and annotations but the cluster's and
// Crossplane's (Crossplane sets its own), and every other top-level field
// (spec, data) as observed; not status, uid, resourceVersion, managedFields
// or ownerReferences.
func keptObject(o build.Observed, k keyed, desired map[string]bool) (*unstructured.Unstructured, bool) {
	if desired[k.key] || !o.Has(k.key) {
		return nil, false
	}
	m := o.Object(k.key)
	if m == nil || m["apiVersion"] != k.apiVersion || m["kind"] != k.kind {
		return nil, false
	}
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, false
	}
	out := make(map[string]any, len(m))
	for f, v := range m {
		if f != "metadata" && f != "status" {
			out[f] = copyJSON(v)
		}
	}
	md := map[string]any{"name": name}
	if ns, ok := meta["namespace"].(string); ok && ns != "" {
		md["namespace"] = ns
	}
	if l, ok := meta["labels"].(map[string]any); ok && len(l) > 0 {
		md["labels"] = copyJSON(l)
	}
	if a, ok := meta["annotations"].(map[string]any); ok {
		own := map[string]any{}
		for k, v := range a {
			if !systemAnnotation(k) {
				own[k] = v
			}
		}
		if len(own) > 0 {
			md["annotations"] = copyJSON(own)
		}
	}
	out["metadata"] = md
	return &unstructured.Unstructured{Object: out}, true
}

// systemAnnotation: an annotation the cluster or Crossplane writes
// (deployment.kubernetes.io/revision, pv.kubernetes.io/bind-completed,
// crossplane.io/composition-resource-name, ...), not the stack.
func systemAnnotation(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io", "crossplane.io"} {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// copyJSON copies the maps and slices of a decoded JSON value.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = copyJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = copyJSON(x)
		}
		return out
	}
	return v
}
