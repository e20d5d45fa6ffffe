package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

const (
	composition       = "example/composition.yaml"
	legacyComposition = "composition/legacy/composition.yaml"
	xrd               = "xrd/definition.yaml"
	legacyXRD         = "xrd/legacy/definition.yaml"
)

// stack is one rendered golden: example/golden/<name>.yaml is the output of
// `crossplane render <xr> <composition> example/functions.yaml
// --include-function-results <args>`.
type stack struct {
	name        string
	xr          string
	composition string
	xrd         string   // the XRD the XR belongs to (validate_test.go)
	args        []string // extra render args
	// external lists objects the stack's pods reference but does not compose
	// ("Kind/name"), for the reference checks in typed_test.go. Secrets are
	// always external.
	external []string
}

var stacks = []stack{
	{name: "seed", xr: "example/xr.yaml", composition: composition, xrd: xrd},
	// The XR Crossplane creates for example/claim.yaml with the legacy XRD.
	{name: "legacy-xr", xr: "example/stacks/legacy-xr.yaml", composition: legacyComposition, xrd: legacyXRD},
	{name: "multi-model", xr: "example/stacks/multi-model.yaml", composition: composition, xrd: xrd},
	{name: "lmcache", xr: "example/stacks/lmcache.yaml", composition: composition, xrd: xrd},
	{name: "kvaware", xr: "example/stacks/kvaware.yaml", composition: composition, xrd: xrd},
	{name: "session", xr: "example/stacks/session.yaml", composition: composition, xrd: xrd,
		external: []string{"PersistentVolumeClaim/shared-models"}},
	{name: "production", xr: "example/stacks/production.yaml", composition: composition, xrd: xrd},
	{name: "disaggregated", xr: "example/stacks/disaggregated.yaml", composition: composition, xrd: xrd},
	{name: "disaggregated-lmcache", xr: "example/stacks/disaggregated-lmcache.yaml", composition: composition, xrd: xrd},
	// A model on two nodes: a LeaderWorkerSet; crossplane render is given
	// no CRDs, so the function warns that it assumes LeaderWorkerSet's.
	{name: "multi-node", xr: "example/stacks/multi-node.yaml", composition: composition, xrd: xrd},
	// A mixture-of-experts model's 16 data-parallel ranks with its experts
	// spread, on a LeaderWorkerSet group of two pods of 8 GPUs.
	{name: "wide-ep", xr: "example/stacks/wide-ep.yaml", composition: composition, xrd: xrd},
	// Two models on the inference extension: per model a pool and a
	// picker, one route; render is given no CRDs, so the function warns
	// that it assumes the InferencePool's and the HTTPRoute's.
	{name: "inference-extension", xr: "example/stacks/inference-extension.yaml", composition: composition, xrd: xrd},
	// A disaggregated model on the inference extension: one pool over
	// both groups, llm-d's picker with a prefill and a decode profile,
	// the routing sidecar on the decode pods.
	{name: "disaggregated-inference-extension", xr: "example/stacks/disaggregated-inference-extension.yaml", composition: composition, xrd: xrd},
	{name: "runtime-adapters", xr: "example/stacks/runtime-adapters.yaml", composition: composition, xrd: xrd},
	// vLLM's native KV offload tiers: a CPU tier alone, and a CPU tier over
	// a ReadWriteMany claim two replicas share.
	{name: "kv-offload", xr: "example/stacks/kv-offload.yaml", composition: composition, xrd: xrd},
	// Weights downloaded once: the fill Job of the model's claim; the
	// engines are composed once Crossplane observes it Complete.
	{name: "model-cache", xr: "example/stacks/model-cache.yaml", composition: composition, xrd: xrd},
	// Precise prefix-cache routing: the engines publish their KV events,
	// llm-d's picker subscribes and tokenizes through the engines.
	{name: "precise-prefix", xr: "example/stacks/precise-prefix.yaml", composition: composition, xrd: xrd},
	// ServiceMonitors, a Grafana dashboard and a PrometheusRule, over two
	// models on either side of vLLM's 0.11.0 metric renames; render is given
	// no CRDs, so the function warns that it assumes the ServiceMonitor's
	// and the PrometheusRule's.
	{name: "observability", xr: "example/stacks/observability.yaml", composition: composition, xrd: xrd},
	// Two models on the inference extension scaled by KEDA on their
	// pickers' signals: one on the requests in flight, one to zero.
	{name: "picker-scaling", xr: "example/stacks/picker-scaling.yaml", composition: composition, xrd: xrd},
	// A disaggregated model whose prefill and decode groups each scale on
	// their own engines' waiting requests.
	{name: "disaggregated-scaling", xr: "example/stacks/disaggregated-scaling.yaml", composition: composition, xrd: xrd},
	// A model and its canary on the next vLLM release, 90/10 on the
	// model's route across two pools (model.canary).
	{name: "canary", xr: "example/stacks/canary.yaml", composition: composition, xrd: xrd},
	// Every optional kind: HPA, KEDA, PDB, Ingress, HTTPRoute, NetworkPolicy,
	// ServiceMonitor, LMCache server, LoRA sidecar; the CRDs of KEDA, the
	// Gateway API and the Prometheus Operator as a cluster would have them.
	{name: "full", xr: "test/render/testdata/full.yaml", composition: composition, xrd: xrd,
		args: []string{"--required-resources=example/required/crds.yaml"}},
	// Renders, with two Warning results.
	{name: "warnings", xr: "test/render/testdata/warnings.yaml", composition: composition, xrd: xrd},
	// The seed with observed composed resources and the pods the function asks
	// for as required resources (example/observed/).
	observed("downloading"),
	observed("ready"),
	observed("gpu-pending"),
}

func observed(state string) stack {
	return stack{
		name: "observed-" + state, xr: "example/xr.yaml", composition: composition, xrd: xrd,
		args: []string{
			"--observed-resources=example/observed/" + state + "/composed.yaml",
			"--required-resources=example/observed/" + state + "/pods.yaml",
		},
	}
}

func (s stack) renderArgs() []string {
	return append([]string{"--include-function-results"}, s.args...)
}

// TestGolden renders every stack twice, checks both outputs are identical (the
// CLI fixes lastTransitionTime, the function is deterministic) and compares
// them with example/golden/<name>.yaml.
func TestGolden(t *testing.T) {
	for _, s := range stacks {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			first := mustRender(t, s.xr, s.composition, s.renderArgs()...)
			second := mustRender(t, s.xr, s.composition, s.renderArgs()...)
			if !bytes.Equal(first, second) {
				t.Fatalf("two renders of %s differ: the output is not deterministic", s.xr)
			}
			compareGolden(t, s.name, first)
		})
	}
}

// TestGoldenFiles fails on a golden file no stack writes (a renamed or removed
// stack), so example/golden/ never holds stale output.
func TestGoldenFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "example", "golden", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range stacks {
		known[goldenPath(s.name)] = true
	}
	for _, f := range files {
		if !known[f] {
			t.Errorf("%s: no stack in test/render renders it; delete it or add the stack", rel(f))
		}
	}
	if len(files) == 0 && !*update {
		t.Error("example/golden/ holds no golden files")
	}
}

// TestReadyStack: with the observed state of a serving stack
// (example/observed/ready), the XR is Ready. It reads the golden file, which
// TestGolden checks against the render.
func TestReadyStack(t *testing.T) {
	out, err := os.ReadFile(goldenPath("observed-ready"))
	if err != nil {
		t.Fatal(err)
	}
	docs := splitDocs(t, out)
	xr := docs[0].obj
	if xr["kind"] != "ProductionStack" {
		t.Fatalf("first rendered object is a %v, want the ProductionStack", xr["kind"])
	}
	status, _ := xr["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	want := map[string]bool{"Ready": true, "EnginesReady": true, "RouterReady": true, "StorageReady": true}
	for _, c := range conds {
		c, _ := c.(map[string]any)
		typ, _ := c["type"].(string)
		if !want[typ] {
			continue
		}
		delete(want, typ)
		if c["status"] != "True" {
			t.Errorf("condition %s is %v (%v: %v), want True", typ, c["status"], c["reason"], c["message"])
		}
	}
	for typ := range want {
		t.Errorf("condition %s is missing", typ)
	}
	if status["readyModels"] != "1/1" {
		t.Errorf("status.readyModels = %v, want 1/1", status["readyModels"])
	}
}

// fatalPrefix is how `crossplane render` reports a Fatal result of our step.
const fatalPrefix = `crossplane: error: cannot render composite resource: pipeline step "render-vllm-stack" returned a fatal result: `

// fatals are manifests the function refuses, with the exact Fatal message it
// returns; `crossplane render` exits 1, prints nothing on stdout and the
// message on stderr.
var fatals = []struct {
	name, xr, message string
}{
	{
		name: "bad", xr: "test/render/testdata/bad.yaml",
		message: `invalid ProductionStack: spec.vllmConfig.gpuMemoryUtilization "1.5" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"; ` +
			`spec.model.toolCallParser is required when enableTool is true: set a parser such as hermes, llama3_json or mistral (vLLM refuses to start without one)`,
	},
	{
		name: "unknown-field", xr: "test/render/testdata/invalid/unknown-field.yaml",
		message: `spec has fields the ProductionStack API does not know: unknown field "spec.vllmConfig.gpuMemoryUtilisation"; check the spelling against ` + "`kubectl explain productionstack.spec`",
	},
	{
		name: "replicas", xr: "test/render/testdata/invalid/replicas.yaml",
		message: `invalid ProductionStack: spec.replicas -1 is invalid: must be 0 or more`,
	},
	{
		name: "router-type", xr: "test/render/testdata/invalid/router-type.yaml",
		message: `invalid ProductionStack: spec.routerConfig.routerType "random" is not supported: use one of roundrobin, session, prefixaware, kvaware`,
	},
}

func TestFatal(t *testing.T) {
	for _, c := range fatals {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, c.xr, composition, "--include-function-results")
			if r.ExitCode != 1 {
				t.Errorf("crossplane render exit code = %d, want 1", r.ExitCode)
			}
			if len(r.Stdout) != 0 {
				t.Errorf("crossplane render printed output for a Fatal result:\n%s", r.Stdout)
			}
			if want := fatalPrefix + c.message + "\n"; string(r.Stderr) != want {
				t.Errorf("stderr:\n got: %q\nwant: %q", r.Stderr, want)
			}
		})
	}
}
