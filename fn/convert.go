package fn

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/function-sdk-go/resource/composed"
)

// toComposed converts a typed object into a desired composed resource that
// holds only the fields the function has an opinion about.
//
// Crossplane applies desired resources with server-side apply, so every field
// sent is a field claimed. composed.From encodes with go-json-experiment, which
// keeps zero numbers and false booleans (hostPort: 0, paused: false,
// successThreshold: 0, a zero status); encoding/json drops those through the
// API types' omitempty tags and leaves only nulls (creationTimestamp) and empty
// objects of non-pointer structs (status: {}, resources: {}), which prune
// removes.
func toComposed(o runtime.Object) (*composed.Unstructured, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %T: %w", o, err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("cannot decode %T: %w", o, err)
	}
	// The function never has an opinion on a composed object's status, and
	// some status types have fields without omitempty (a PodDisruptionBudget's
	// currentHealthy: 0): sending them would claim fields the controllers own.
	delete(obj, "status")
	prune(obj)
	return &composed.Unstructured{Unstructured: unstructured.Unstructured{Object: obj}}, nil
}

// keepEmpty names the objects whose presence is meaningful even when empty:
// `emptyDir: {}` is a volume.
var keepEmpty = map[string]bool{"emptyDir": true}

// prune removes null values and empty objects, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(t)
			if len(t) == 0 && !keepEmpty[k] {
				delete(m, k)
			}
		case []any:
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
