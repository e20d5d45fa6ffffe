package stack

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/stack/validate"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// TestShapesAreTheXRDs: the function's shapes are the XRD's patterns, so
// the API server and the function refuse the same values.
func TestShapesAreTheXRDs(t *testing.T) {
	var schema map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &schema); err != nil {
		t.Fatal(err)
	}
	model := at(schema, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties", "model", "properties")
	lora := at(model, "loraAdapters", "items", "properties")
	for field, re := range map[string]string{
		"path": validate.LocalPath.String(), "modelURL": validate.ModelRef.String(), "servedModelName": validate.ServedName.String(),
		"toolCallParser": validate.ParserName.String(), "revision": validate.ModelRevision.String(),
	} {
		if got := at(model, field, "pattern"); got != re {
			t.Errorf("spec.model.%s: XRD pattern %v, function %s", field, got, re)
		}
	}
	if got := at(lora, "name", "pattern"); got != validate.ServedName.String() {
		t.Errorf("loraAdapters.name: XRD pattern %v, function %s", got, validate.ServedName)
	}
	if got := at(lora, "path", "pattern"); got != validate.HFIDOrPath.String() {
		t.Errorf("loraAdapters.path: XRD pattern %v, function %s", got, validate.HFIDOrPath)
	}
}

// at walks a decoded YAML document by keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}
