package helm2stack

import (
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/chartkeys"
)

// TestDropReasonsAreTheRows: a key the stack does not support is reported
// with its README row's reason ("Coming from the Helm chart"), so what the
// converter prints and the table people read do not drift apart. Each table
// key is set on its own, to a value that is not the chart's default, in a
// values file that converts; every key the converter then drops must have a
// row whose second cell holds the reason (backticks and arrows aside).
func TestDropReasonsAreTheRows(t *testing.T) {
	keys, err := chartkeys.Read(chartKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := chartkeys.Roots(keys)
	readme, err := chartkeys.ReadREADME("../docs/helm.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		patterns []string
		field    string
	}
	var rows []row
	for _, r := range readme {
		p, err := chartkeys.CellKeys(r.Cell, roots)
		if err != nil {
			t.Fatalf("README row %s: %v", r.Cell, err)
		}
		rows = append(rows, row{p, normalizeReason(r.Field)})
	}
	checked := 0
	for _, r := range table {
		values, ok := probeValues(r.key)
		if !ok {
			continue
		}
		res, err := Convert(values, Options{Name: "s"})
		if err != nil {
			continue // the key converts, and the probe has the wrong type for it: not a drop
		}
		for _, f := range res.Dropped {
			key := indexes.ReplaceAllString(f.Key, "[]")
			if why, ok := situational[key]; ok {
				t.Logf("%s: %s (%s)", key, f.Message, why)
				continue
			}
			checked++
			found := false
			for _, row := range rows {
				for _, p := range row.patterns {
					if chartkeys.Matches(p, key) && strings.Contains(row.field, normalizeReason(f.Message)) {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("%s is dropped with %q, which its README row does not say", key, f.Message)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d dropped keys checked: the probe values no longer reach the drops", checked)
	}
}

// situational are drops whose reason depends on the value (or on other
// keys), not the key's row: the row says what the key becomes, the message
// why this value cannot.
var situational = map[string]string{
	"servingEngineSpec.modelSpec[].lmcacheConfig.enableController": "derived from routingLogic kvaware, which the probe does not set",
	"servingEngineSpec.modelSpec[].lmcacheConfig.controllerPort":   "derived from routingLogic kvaware, which the probe does not set",
	"servingEngineSpec.modelSpec[].chatTemplate":                   "a file name of the chart's template claim, where the row takes the text",
	"routerSpec.serviceType":                                       "a Service type Kubernetes does not have",
}

var indexes = regexp.MustCompile(`\[\d+\]`)

// probeValues is a values file with one model (that converts alone) and key
// set to a value no drop keeps quiet about: a string for a leaf, a block
// with enabled: true for raySpec.
func probeValues(key string) ([]byte, bool) {
	const model = "servingEngineSpec.modelSpec[]."
	base := map[string]any{"name": "m", "repository": "vllm/vllm-openai", "tag": "v0.10.2", "modelURL": "x", "pvcStorage": "1Gi"}
	values := map[string]any{"servingEngineSpec": map[string]any{"modelSpec": []any{base}}}
	probe := any("probe-value")
	if strings.HasSuffix(key, ".raySpec") {
		probe = map[string]any{"enabled": true}
	}
	var at map[string]any
	var path []string
	switch {
	case strings.HasPrefix(key, model):
		at, path = base, strings.Split(strings.TrimPrefix(key, model), ".")
	case strings.ContainsAny(key, "[]*"):
		return nil, false
	default:
		at, path = values, strings.Split(key, ".")
	}
	for _, p := range path[:len(path)-1] {
		next, ok := at[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			at[p] = next
		}
		at = next
	}
	at[path[len(path)-1]] = probe
	b, err := yaml.Marshal(values)
	return b, err == nil
}

var spaces = regexp.MustCompile(`\s+`)

func normalizeReason(s string) string {
	s = strings.NewReplacer("`", "", "→", "->").Replace(s)
	return spaces.ReplaceAllString(s, " ")
}
