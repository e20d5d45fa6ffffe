package main

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var updateExpect = flag.Bool("update-expect", false,
	"rewrite the expect files from the function's rendering and the chart's: helm's with HELM_RENDERED (hack/helm-compare.sh UPDATE_EXPECT=1), else the expect files' own chart side")

// TestHelmCompare compares the chart's engine and router containers, as
// `helm template` renders them for each scenario (hack/helm-compare.sh
// puts them in HELM_RENDERED), with the chart side of the expect files.
// Flags and variables are compared as sets: the chart orders them
// differently. It skips without HELM_RENDERED: the chart is not available
// from the Go module proxy or in CI (make helm-compare).
func TestHelmCompare(t *testing.T) {
	dir := os.Getenv("HELM_RENDERED")
	if dir == "" {
		t.Skip("HELM_RENDERED is not set: run make helm-compare (needs the production-stack chart and helm)")
	}
	for _, name := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			chart := chartView(t, filepath.Join(dir, name+".yaml"))
			if *updateExpect {
				writeExpect(t, name, renderStack(t, name), chart)
			}
			want := side(readExpect(t, name), "chart")
			compareViews(t, "the chart's rendering (sorted)", sorted(want), sorted(chart))
		})
	}
}

// chartView reads the Deployments of a `helm template` output.
func chartView(t *testing.T, path string) view {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var deployments []appsv1.Deployment
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		deployments = append(deployments, d)
	}
	return viewOf(t, deployments)
}

// writeExpect merges both renderings into an expect file: the stack's
// entries in its order, each plain when the chart has it too, then the
// chart's own; every difference gets the README row that explains it
// (differenceRow), so a difference nobody explained fails the test.
func writeExpect(t *testing.T, name string, stack, chart view) {
	t.Helper()
	fallback := scenarioRows[name]
	f := expectFile{Engines: map[string]lists[expectEntry]{}, Router: mergeLists(stack.Router, chart.Router, "router", fallback)}
	for m := range chart.Engines {
		stack.Engines[m] = stack.Engines[m] // a model only the chart runs
	}
	for m, c := range stack.Engines {
		f.Engines[m] = mergeLists(c, chart.Engines[m], "engine", fallback)
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	header := "# " + name + ": the engine and router containers of the scenario's values, as the function renders\n" +
		"# the converted stack and as the chart (vllm-stack 0.1.12) renders the values. A plain entry is in\n" +
		"# both; {stack: ...} or {chart: ...} is in one only, and row names the README row (\"Coming from the\n" +
		"# Helm chart\") that says why. Written by hack/helm-compare.sh UPDATE_EXPECT=1 (the stack's side\n" +
		"# alone: go test ./cmd/helm2stack -run TestScenariosRender -update-expect); review the diff.\n"
	if err := os.WriteFile(expectPath(name), append([]byte(header), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mergeLists merges one container's lists of both renderings; fallback is
// the row of a difference no entry of differences explains.
func mergeLists(stack, chart lists[string], who, fallback string) lists[expectEntry] {
	var out lists[expectEntry]
	st, ch, o := stack.fields(), chart.fields(), out.fields()
	for i := range o {
		*o[i] = mergeList(*st[i], *ch[i], who+" "+listNames[i], fallback)
	}
	return out
}

func mergeList(stack, chart []string, where, fallback string) []expectEntry {
	left := slices.Clone(chart)
	var out []expectEntry
	for _, s := range stack {
		if i := slices.Index(left, s); i >= 0 {
			left = slices.Delete(left, i, i+1)
			out = append(out, expectEntry{Both: s})
			continue
		}
		out = append(out, expectEntry{Stack: s, Row: cmp.Or(differenceRow(where, s), fallback)})
	}
	sort.Strings(left)
	for _, c := range left {
		out = append(out, expectEntry{Chart: c, Row: cmp.Or(differenceRow(where, c), fallback)})
	}
	return out
}

// differenceRow is the README row that explains an entry one rendering has
// and the other has not, by where it is and how it starts.
func differenceRow(where, entry string) string {
	for _, d := range differences {
		if d.where == where && strings.HasPrefix(entry, d.prefix) {
			return d.row
		}
	}
	return ""
}

// differences between the chart's rendering and the stack's, each with
// the first cell of the README row that explains it. TestExpectRows checks
// that every row exists.
var differences = []struct{ where, prefix, row string }{
	{"engine args", "--chat-template ", "`modelSpec[].chatTemplate`, `chatTemplateConfigMap`"},
	{"engine args", "--gpu_memory_utilization ", vllmConfigRow},
	{"engine args", "--gpu-memory-utilization ", vllmConfigRow},
	{"engine args", "--max_loras ", vllmConfigRow},
	{"engine args", "--max-loras ", vllmConfigRow},
	{"engine args", "--no-enable-prefix-caching", vllmConfigRow},
	{"engine args", "--shutdown-timeout ", vllmConfigRow},
	{"engine args", "--lora-modules ", "`loraAdapters[].*`"},
	{"engine env", "PYTHONHASHSEED=", "`modelSpec[].env`"},
	{"engine env", "PROMETHEUS_MULTIPROC_DIR=", "`modelSpec[].vllmConfig.prometheusMultiprocDir`"},
	{"engine env", "LMCACHE_LOCAL_DISK=", lmcacheRow},
	{"engine env", "VLLM_RPC_TIMEOUT=", lmcacheRow},
	{"engine env", "LMCACHE_LMCACHE_INSTANCE_ID=", kvawareEngineRow},
	{"engine env", "POD_NAME=", kvawareEngineRow},
	{"engine env", "VLLM_ALLOW_RUNTIME_LORA_UPDATING=", "`modelSpec[].enableLoRA`, `enableTool`, `toolCallParser`"},
	{"engine ports", "zmq-port ", pdRow},
	{"engine ports", "ucx-port ", pdRow},
	{"engine ports", "lmcache-worker ", "`modelSpec[].lmcacheConfig.{workerPort, workerPorts}`"},
	{"engine probes", "", "`servingEngineSpec.{startupProbe, readinessProbe, livenessProbe}`"},
	{"router args", "--k8s-label-selector ", "`servingEngineSpec.labels`"},
	{"router args", "--k8s-service-discovery-type ", "`routerSpec.k8sServiceDiscoveryType`"},
	{"router env", "HOME=", "`routerSpec.securityContext`, `containerSecurityContext`"},
	{"router env", "PYTHONHASHSEED=", routerEnvRow},
	{"router env", "LMCACHE_LOG_LEVEL=", routerEnvRow},
	{"router env", "HF_TOKEN=", routerEnvRow},
	{"router ports", "lmcache-port ", "`routerSpec.lmcacheControllerPort`"},
	{"router ports", "lmcache-reply ", "`routerSpec.lmcacheControllerReplyPort`, `lmcacheControllerHeartbeatPort`"},
	{"router ports", "lmc-heartbeat ", "`routerSpec.lmcacheControllerReplyPort`, `lmcacheControllerHeartbeatPort`"},
	{"router probes", "", "`routerSpec.{startupProbe, readinessProbe, livenessProbe}`"},
}

// scenarioRows explain every other difference of a scenario: the chart's
// P/D recipe becomes a disaggregated model, with LMCache off and vLLM's
// NixlConnector moving the KV cache, behind another routing logic.
var scenarioRows = map[string]string{"disagg-prefill": pdRow}

// README rows several differences cite.
const (
	vllmConfigRow    = "`modelSpec[].vllmConfig.{enableChunkedPrefill, enablePrefixCaching, tensorParallelSize, gpuMemoryUtilization, maxLoras, extraArgs}`"
	lmcacheRow       = "`modelSpec[].lmcacheConfig.{enabled, cpuOffloadingBufferSize, diskOffloadingBufferSize}`"
	kvawareEngineRow = "`modelSpec[].lmcacheConfig.{enableController, instanceId, controllerPort}`"
	pdRow            = "`modelSpec[].lmcacheConfig.{enablePD, kvRole, enableNixl, nixl*}`"
	routerEnvRow     = "`routerSpec.hf_token`, `routerSpec.lmcacheConfig.logLevel`"
)

// TestExpectRows checks that every difference of every expect file, and
// every row differences cites, names a row of the README's Helm table.
func TestExpectRows(t *testing.T) {
	rows := readmeHelmRows(t)
	for _, d := range differences {
		if !rows[d.row] {
			t.Errorf("differences: %s %q cites %q, which is no row of the README's Helm table", d.where, d.prefix, d.row)
		}
	}
	for _, name := range scenarios(t) {
		mapLists(readExpect(t, name), func(who, list string, es []expectEntry) []string {
			for _, e := range es {
				if e.Both == "" && !rows[e.Row] {
					t.Errorf("%s, %s %s: %q differs from the chart, and %q is no row of the README's Helm table", name, who, list, e.Stack+e.Chart, e.Row)
				}
			}
			return nil
		})
	}
}

// readmeHelmRows are the first cells of the "Coming from the Helm chart"
// table (docs/helm.md).
func readmeHelmRows(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/helm.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "# Coming from the Helm chart\n")
	if !ok {
		t.Fatal("docs/helm.md has no heading Coming from the Helm chart")
	}
	section, _, _ = strings.Cut(section, "\n#")
	rows := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if cells := strings.Split(line, " | "); strings.HasPrefix(line, "| `") && len(cells) > 1 {
			rows[strings.TrimPrefix(cells[0], "| ")] = true
		}
	}
	if len(rows) < 50 {
		t.Fatalf("found %d rows in the README's Helm table; is the section intact?", len(rows))
	}
	return rows
}
