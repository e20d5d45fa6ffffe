package chartkeys

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
		got, err := CellKeys(tc.cell, roots)
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
		if _, err := CellKeys(cell, roots); err == nil || err.Error() != want {
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
		if got := Matches(tc.pattern, tc.key); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}
