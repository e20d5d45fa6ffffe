package render_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// optionalKinds are the composed kinds whose CRDs a cluster may lack, with
// the CRD the preview warning names.
var optionalKinds = map[string]string{
	"ScaledObject":   "scaledobjects.keda.sh",
	"HTTPRoute":      "httproutes.gateway.networking.k8s.io",
	"ServiceMonitor": "servicemonitors.monitoring.coreos.com",
	// example/stacks/inference-extension.yaml, on llm-d's picker v0.10.0.
	"InferenceObjective": "inferenceobjectives.llm-d.ai",
	"PrometheusRule":     "prometheusrules.monitoring.coreos.com",
}

// TestPreviewEveryStack: `crossplane render` with no flags but
// --include-function-results previews every example stack and every stack
// cmd/helm2stack writes for the chart's scenarios (KEDA, HTTPRoute and
// ServiceMonitor among them): exit 0, each optional kind composed, and one
// preview warning per CRD it assumed, since render answers the function's CRD
// requirements with nothing.
func TestPreviewEveryStack(t *testing.T) {
	tools(t) // skips without the binaries, before the coverage check below
	var xrs []string
	for _, glob := range []string{"example/xr.yaml", "example/stacks/*.yaml", "test/render/testdata/full.yaml", "cmd/helm2stack/testdata/scenarios/*.stack.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s matches nothing (%v)", glob, err)
		}
		xrs = append(xrs, m...)
	}
	kindsSeen := map[string]bool{}
	for _, path := range xrs {
		xr := rel(path)
		comp := composition
		if strings.HasSuffix(xr, "legacy-xr.yaml") {
			comp = legacyComposition
		}
		t.Run(xr, func(t *testing.T) {
			docs := splitDocs(t, mustRender(t, xr, comp, "--include-function-results"))
			for kind, crd := range optionalKinds {
				composed, warned := false, false
				for _, d := range docs {
					msg, _ := d.obj["message"].(string)
					composed = composed || d.kind() == kind
					warned = warned || d.kind() == "Result" && d.obj["severity"] == "SEVERITY_WARNING" &&
						strings.HasPrefix(msg, "preview: ") && strings.Contains(msg, "shown as if the cluster had its CRD "+crd+";")
				}
				if composed != warned {
					t.Errorf("%s composed: %v, preview warning for %s: %v; want both or neither", kind, composed, crd, warned)
				}
				if composed {
					kindsSeen[kind] = true
				}
			}
		})
	}
	for kind := range optionalKinds {
		if !kindsSeen[kind] {
			t.Errorf("no stack previews a %s: the test covers nothing for it", kind)
		}
	}
}
