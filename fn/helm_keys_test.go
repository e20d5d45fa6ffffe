package fn

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/internal/chartkeys"
)

// The README's Helm table must account for every key of the chart, and name
// only keys the chart has. testdata/helm/chart-keys.tsv lists the chart's
// keys at vllm-stack-0.1.12 and HEAD (its header says how they were chosen);
// helmCellKeys reads the key patterns of a row's first cell.

const chartKeysFile = "testdata/helm/chart-keys.tsv"

// helmCellKeys expands the first cell of a README Helm row into full key
// patterns. Each comma-separated item is a key in backticks:
//   - `modelSpec[].x` abbreviates `servingEngineSpec.modelSpec[].x`;
//   - a key starting with one of roots (the chart's top-level keys) is
//     absolute, any other is relative to the parent of the last absolute
//     one: `routerSpec.extraArgs`, `otel.*` is routerSpec.otel.*;
//   - `p.{a, b.c}` is p.a and p.b.c, and its parent is p;
//   - a trailing `*` is a wildcard (see matchesKey), and `p.*` has the parent
//     of p.
func helmCellKeys(cell string, roots []string) ([]string, error) {
	var out []string
	parent := ""
	for _, item := range splitTopLevel(cell) {
		if len(item) < 3 || item[0] != '`' || item[len(item)-1] != '`' || strings.Count(item, "`") != 2 {
			return nil, fmt.Errorf("item %q is not one key in backticks", item)
		}
		key := item[1 : len(item)-1]
		if strings.HasPrefix(key, "modelSpec[]") {
			key = "servingEngineSpec." + key
		}
		if slices.Contains(roots, rootOf(key)) {
			parent = parentOf(key)
		} else {
			key = parent + key
		}
		expanded, err := expandGroup(key)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", item, err)
		}
		out = append(out, expanded...)
	}
	return out, nil
}

// splitTopLevel splits s at ", " outside braces.
func splitTopLevel(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := range len(s) {
		switch {
		case s[i] == '{':
			depth++
		case s[i] == '}':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], ", "):
			items = append(items, s[start:i])
			start = i + 2
		}
	}
	return append(items, s[start:])
}

// rootOf is a key's first segment: servingEngineSpec, loraAdapters, ...
func rootOf(key string) string {
	end := strings.IndexAny(key, ".[")
	if end < 0 {
		return key
	}
	return key[:end]
}

// parentOf is the prefix relative keys after key are completed with: up to
// the last dot before a group, else before the last segment of key without a
// trailing ".*".
func parentOf(key string) string {
	if i := strings.Index(key, "{"); i >= 0 {
		return key[:i]
	}
	key = strings.TrimSuffix(key, ".*")
	return key[:strings.LastIndex(key, ".")+1]
}

// expandGroup expands one "{a, b}" group, the only one allowed in a key.
func expandGroup(key string) ([]string, error) {
	open, end := strings.Index(key, "{"), strings.Index(key, "}")
	if open < 0 && end < 0 {
		return []string{key}, nil
	}
	if open < 0 || end != len(key)-1 || strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
		return nil, fmt.Errorf("want at most one {a, b} group, at the end")
	}
	var out []string
	for _, member := range strings.Split(key[open+1:end], ", ") {
		if member == "" || strings.ContainsAny(member, " ,") {
			return nil, fmt.Errorf("group member %q: separate members with a comma and one space", member)
		}
		out = append(out, key[:open]+member)
	}
	return out, nil
}

// matchesKey: a pattern "p.*" matches p and every key under it, "p*" every
// key starting with p, any other pattern only itself.
func matchesKey(pattern, key string) bool {
	if base, ok := strings.CutSuffix(pattern, ".*"); ok {
		return key == base || strings.HasPrefix(key, base+".")
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return pattern == key
}

func TestHelmCellKeys(t *testing.T) {
	roots := []string{"servingEngineSpec", "routerSpec", "cacheserverSpec", "loraAdapters", "kube-prometheus-stack"}
	for _, tc := range []struct {
		cell string
		want []string
	}{
		{"`modelSpec[].name`", []string{"servingEngineSpec.modelSpec[].name"}},
		{"`servingEngineSpec.modelSpec[].name`", []string{"servingEngineSpec.modelSpec[].name"}},
		{"`modelSpec[].requestCPU`, `requestGPUType`", []string{"servingEngineSpec.modelSpec[].requestCPU", "servingEngineSpec.modelSpec[].requestGPUType"}},
		{"`servingEngineSpec.runtimeClassName`, `tolerations`, `modelSpec[].runtimeClassName`, `priorityClassName`", []string{
			"servingEngineSpec.runtimeClassName", "servingEngineSpec.tolerations",
			"servingEngineSpec.modelSpec[].runtimeClassName", "servingEngineSpec.modelSpec[].priorityClassName"}},
		{"`modelSpec[].vllmConfig.{maxModelLen, dtype}`", []string{"servingEngineSpec.modelSpec[].vllmConfig.maxModelLen", "servingEngineSpec.modelSpec[].vllmConfig.dtype"}},
		{"`cacheserverSpec.{enabled, image.repository}`, `serde`", []string{"cacheserverSpec.enabled", "cacheserverSpec.image.repository", "cacheserverSpec.serde"}},
		{"`modelSpec[].lmcacheConfig.{enablePD, nixl*}`", []string{"servingEngineSpec.modelSpec[].lmcacheConfig.enablePD", "servingEngineSpec.modelSpec[].lmcacheConfig.nixl*"}},
		{"`routerSpec.autoscaling.*`, `pdb.*`", []string{"routerSpec.autoscaling.*", "routerSpec.pdb.*"}},
		{"`routerSpec.extraArgs`, `otel.*`, `rootPath`", []string{"routerSpec.extraArgs", "routerSpec.otel.*", "routerSpec.rootPath"}},
		{"`routerSpec.hf_token`, `routerSpec.lmcacheConfig.logLevel`, `env`", []string{"routerSpec.hf_token", "routerSpec.lmcacheConfig.logLevel", "routerSpec.lmcacheConfig.env"}},
		{"`loraAdapters[].*`, `kube-prometheus-stack.*`", []string{"loraAdapters[].*", "kube-prometheus-stack.*"}},
	} {
		got, err := helmCellKeys(tc.cell, roots)
		if err != nil {
			t.Errorf("%s: %v", tc.cell, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.cell, diff)
		}
	}
	for cell, want := range map[string]string{
		"`modelSpec[].raySpec`, LeaderWorkerSet multi-node": `item "LeaderWorkerSet multi-node" is not one key in backticks`,
		"`a`,`b`":                     "item \"`a`,`b`\" is not one key in backticks",
		"`routerSpec.{a, b}.c`":       "item `routerSpec.{a, b}.c`: want at most one {a, b} group, at the end",
		"`routerSpec.{a,b}`":          "item `routerSpec.{a,b}`: group member \"a,b\": separate members with a comma and one space",
		"`routerSpec.{a, {b, c}}`":    "item `routerSpec.{a, {b, c}}`: want at most one {a, b} group, at the end",
		"`servingEngineSpec.labels` ": "item \"`servingEngineSpec.labels` \" is not one key in backticks",
	} {
		if _, err := helmCellKeys(cell, roots); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", cell, err, want)
		}
	}
}

func TestMatchesKey(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"routerSpec.ingress.*", "routerSpec.ingress.hosts", true},
		{"routerSpec.ingress.*", "routerSpec.ingressClass", false},
		{"kube-prometheus-stack.*", "kube-prometheus-stack", true},
		{"loraAdapters[].*", "loraAdapters[].adapterSource.type", true},
		{"servingEngineSpec.modelSpec[].lmcacheConfig.nixl*", "servingEngineSpec.modelSpec[].lmcacheConfig.nixlPeerPort", true},
		{"servingEngineSpec.modelSpec[].lmcacheConfig.nixl*", "servingEngineSpec.modelSpec[].lmcacheConfig.enableNixl", false},
		{"servingEngineSpec.modelSpec[].pvcStorage", "servingEngineSpec.modelSpec[].pvcStorage.emptyDir", false},
		{"servingEngineSpec.modelSpec[].pvcStorage", "servingEngineSpec.modelSpec[].pvcStorage", true},
	} {
		if got := matchesKey(tc.pattern, tc.key); got != tc.want {
			t.Errorf("matchesKey(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

// TestHelmTableCoversChartKeys: every key of the chart has exactly one row in
// the README's Helm table, and every key a row names is the chart's.
func TestHelmTableCoversChartKeys(t *testing.T) {
	keys, err := chartkeys.Read(chartKeysFile)
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, k := range keys {
		if r := rootOf(k); !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	rowsOf := map[string][]string{} // chart key: the rows that name it
	for _, row := range helmTableKeys(t, "../README.md") {
		patterns, err := helmCellKeys(row, roots)
		if err != nil {
			t.Errorf("README row %s: %v", row, err)
			continue
		}
		for _, p := range patterns {
			matched := false
			for _, k := range keys {
				if matchesKey(p, k) {
					matched = true
					rowsOf[k] = append(rowsOf[k], row)
				}
			}
			if !matched {
				t.Errorf("README row %s names %s, which the chart does not have at 0.1.12 or HEAD (%s)", row, p, chartKeysFile)
			}
		}
	}
	var missing []string
	for _, k := range keys {
		switch rows := slices.Compact(rowsOf[k]); {
		case len(rows) == 0:
			missing = append(missing, k)
		case len(rows) > 1:
			t.Errorf("chart key %s has %d rows in the README's Helm table, want one: %s", k, len(rows), strings.Join(rows, "; "))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d chart keys have no row in the README's Helm table:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	if len(keys) < 300 {
		t.Errorf("%s has %d keys; is it intact?", chartKeysFile, len(keys))
	}
}
