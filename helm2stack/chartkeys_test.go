package helm2stack

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/chartkeys"
)

// chartKeysFile lists the chart's values keys at vllm-stack-0.1.12 and HEAD
// (its header says how they were chosen), in the table's notation:
// servingEngineSpec.modelSpec[].x for a key of a modelSpec item,
// loraAdapters[].x, routerSpec.route.main.x for a key of a route. The
// docs/helm.md's table has a row for each (fn/helm_keys_test.go).
const chartKeysFile = "../stack/testdata/helm/chart-keys.tsv"

// wholeBlocks are the table's entries that take a block of the chart the
// stack does not include whole, dropped when switched on: any key inside
// them is accepted.
var wholeBlocks = []string{"servingEngineSpec.modelSpec[].raySpec", "loraController"}

// TestTableMatchesChartKeys ties the table to the chart's key list: every
// chart key is handled, by its own entry (a conversion, a drop with the
// docs/helm.md row's reason, or a note) or inside a block an entry converts; every
// entry is a chart key, a block of chart keys, or one of notChartKeys.
// Unlike TestTableCoversTheChart it needs no copy of the chart.
func TestTableMatchesChartKeys(t *testing.T) {
	keys, err := chartkeys.Read(chartKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 300 {
		t.Fatalf("%s has %d keys; is it intact?", chartKeysFile, len(keys))
	}
	under := func(key, entry string) bool {
		return strings.HasPrefix(key, entry+".") || strings.HasPrefix(key, entry+"[]")
	}
	for _, r := range table {
		inChart := slices.ContainsFunc(keys, func(k string) bool { return k == r.key || under(k, r.key) })
		where, tutorial := notChartKeys[r.key]
		switch {
		case inChart && tutorial:
			t.Errorf("%s is a key of the chart (%s), not only of %s: remove it from notChartKeys", r.key, chartKeysFile, where)
		case !inChart && !tutorial:
			t.Errorf("table entry %s is no key of the chart (%s): remove it, or list the chart file that sets it in notChartKeys", r.key, chartKeysFile)
		}
	}
	for k := range notChartKeys {
		if _, ok := rules[k]; !ok {
			t.Errorf("notChartKeys has %s, which is no table entry", k)
		}
	}
	for _, k := range keys {
		if _, own := rules[k]; own {
			continue
		}
		// Inside a block: values that set only this key (to null) convert
		// without an unknown-key error, and a key the chart lacks next to it
		// is one, unless the entry takes the block whole.
		if !covered(k) {
			t.Errorf("chart key %s has no table entry, itself or a block around it", k)
			continue
		}
		if err := convertKey(t, k); err != nil && strings.HasPrefix(err.Error(), "unknown key") {
			t.Errorf("chart key %s: %v", k, err)
		}
		sibling := k[:strings.LastIndex(k, ".")+1] + "notAChartKey"
		err := convertKey(t, sibling)
		whole := slices.ContainsFunc(wholeBlocks, func(b string) bool { return under(k, b) })
		switch {
		case whole && err != nil:
			t.Errorf("%s, in a block taken whole: %v", sibling, err)
		case !whole && (err == nil || !strings.HasPrefix(err.Error(), "unknown key") || !strings.Contains(err.Error(), "notAChartKey")):
			t.Errorf("%s: error %v, want an unknown-key error", sibling, err)
		}
	}
}

// convertKey converts values that set key (in the table's notation) to null
// next to one enabled model.
func convertKey(t *testing.T, key string) error {
	t.Helper()
	model := map[string]any{"name": "m", "repository": "vllm/vllm-openai", "tag": "v0.10.2", "modelURL": "org/m"}
	values := map[string]any{"servingEngineSpec": map[string]any{"modelSpec": []any{model}}}
	m := values
	segments := strings.Split(key, ".")
	for i, seg := range segments {
		name, isList := strings.CutSuffix(seg, "[]")
		if i == len(segments)-1 {
			m[name] = nil
			if isList {
				m[name] = []any{nil}
			}
			break
		}
		if isList {
			l, _ := m[name].([]any)
			if len(l) == 0 {
				l = []any{map[string]any{}}
				m[name] = l
			}
			m = l[0].(map[string]any)
			continue
		}
		next, ok := m[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[name] = next
		}
		m = next
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Convert(b, Options{Name: "s"})
	return err
}
