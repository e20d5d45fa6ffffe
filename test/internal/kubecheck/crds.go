package kubecheck

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/crdschema"
)

// LoadCRDs reads the pinned CRDs, once for the process: a fuzz target calls
// it before fuzzing, so that no call of its fuzz function pays for it.
func LoadCRDs() error {
	_, err := crdschema.Load()
	return err
}

// CRDProblems are what the API server refuses in obj, a namespaced object
// of a custom kind the function composes, by its pinned CRD's whole schema
// and CEL rules (internal/crdschema); an error when the CRDs cannot be
// read or obj's kind has none.
func CRDProblems(obj map[string]any) ([]string, error) {
	kinds, err := crdschema.Load()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: crdschema.APIServerJSON(obj)}
	k, ok := kinds[u.GroupVersionKind()]
	if !ok {
		return nil, fmt.Errorf("no pinned CRD serves %s", u.GroupVersionKind())
	}
	// crossplane render leaves the owner's uid empty (there is no API
	// server to assign one); Crossplane sets it (withOwnerUIDs).
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			if refs[i].UID == "" {
				refs[i].UID = "00000000-0000-0000-0000-000000000000"
			}
		}
		u.SetOwnerReferences(refs)
	}
	var out []string
	for _, e := range k.Validate(u.Object) {
		out = append(out, e.Error())
	}
	return out, nil
}
