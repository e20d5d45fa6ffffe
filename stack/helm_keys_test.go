package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/chartkeys"
)

// The README's Helm table must account for every key of the chart, and name
// only keys the chart has. testdata/helm/chart-keys.tsv lists the chart's
// keys at vllm-stack-0.1.12 and HEAD (its header says how they were chosen);
// chartkeys.CellKeys reads the key patterns of a row's first cell.

const chartKeysFile = "testdata/helm/chart-keys.tsv"

// TestHelmTableCoversChartKeys: every key of the chart has exactly one row in
// the Helm table (docs/helm.md), and every key a row names is the chart's.
func TestHelmTableCoversChartKeys(t *testing.T) {
	keys, err := chartkeys.Read(chartKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := chartkeys.Roots(keys)
	rowsOf := map[string][]string{} // chart key: the rows that name it
	for _, row := range helmTableKeys(t, "../docs/helm.md") {
		patterns, err := chartkeys.CellKeys(row, roots)
		if err != nil {
			t.Errorf("docs/helm.md row %s: %v", row, err)
			continue
		}
		for _, p := range patterns {
			matched := false
			for _, k := range keys {
				if chartkeys.Matches(p, k) {
					matched = true
					rowsOf[k] = append(rowsOf[k], row)
				}
			}
			if !matched {
				t.Errorf("docs/helm.md row %s names %s, which the chart does not have at 0.1.12 or HEAD (%s)", row, p, chartKeysFile)
			}
		}
	}
	var missing []string
	for _, k := range keys {
		switch rows := slices.Compact(rowsOf[k]); {
		case len(rows) == 0:
			missing = append(missing, k)
		case len(rows) > 1:
			t.Errorf("chart key %s has %d rows in the Helm table (docs/helm.md), want one: %s", k, len(rows), strings.Join(rows, "; "))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d chart keys have no row in the Helm table (docs/helm.md):\n%s", len(missing), strings.Join(missing, "\n"))
	}
	if len(keys) < 300 {
		t.Errorf("%s has %d keys; is it intact?", chartKeysFile, len(keys))
	}
}
