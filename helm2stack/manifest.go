package helm2stack

import (
	"encoding/json"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Manifest is the stack as YAML for kubectl apply: apiVersion, kind,
// metadata (name, namespace) and spec, keys sorted, no status.
func Manifest(s *v1alpha1.ProductionStack) ([]byte, error) {
	spec, err := json.Marshal(s.Spec)
	if err != nil {
		return nil, err
	}
	meta := map[string]any{"name": s.Name}
	if s.Namespace != "" {
		meta["namespace"] = s.Namespace
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": s.APIVersion,
		"kind":       s.Kind,
		"metadata":   meta,
		"spec":       json.RawMessage(spec),
	})
}
