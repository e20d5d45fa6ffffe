package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// A stack moved from the production-stack Helm chart keeps the names of its
// objects and of the parts users and dashboards refer to (containers, ports,
// volumes). testdata/helm/chart-names.tsv has one row per name, citing the
// chart's template; TestChartNames renders two stacks that between them
// compose every optional object and pins each name to its row, and fails on
// a composed object no row names.

// chartNameRow is one row of chart-names.tsv.
type chartNameRow struct {
	stack, model, kind, resource, chart, chartName, ours, why string
}

// chartNameStacks are the stacks the rows name, by the name the TSV uses.
var chartNameStacks = map[string]string{
	"full":    "../test/render/testdata/full.yaml",
	"kvaware": "../example/stacks/kvaware.yaml",
}

func readChartNames(t *testing.T) []chartNameRow {
	t.Helper()
	rows, err := stacktest.ReadTSV(filepath.Join("testdata", "helm", "chart-names.tsv"), 8)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]chartNameRow, len(rows))
	for i, r := range rows {
		out[i] = chartNameRow{r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]}
	}
	return out
}

// expand replaces the segments S and M of a name pattern with the stack's
// and the model's names.
func (r chartNameRow) expand(pattern, stack string) string {
	segs := strings.Split(pattern, "-")
	for i, s := range segs {
		switch s {
		case "S":
			segs[i] = stack
		case "M":
			segs[i] = r.model
		}
	}
	return strings.Join(segs, "-")
}

func TestChartNames(t *testing.T) {
	rows := readChartNames(t)
	renders := map[string]response{}
	stackNames := map[string]string{}
	for id, path := range chartNameStacks {
		xr := stacktest.LoadXR(t, path, "")
		renders[id] = reconciled(t, xr, nil)
		if msg := renders[id].refusal; msg != "" {
			t.Fatalf("%s: %s", path, msg)
		}
		stackNames[id] = xr["metadata"].(map[string]any)["name"].(string)
	}
	covered := map[string]bool{} // resource key patterns the rows name
	for _, r := range rows {
		rsp, ok := renders[r.stack]
		if !ok {
			t.Errorf("row %v: unknown stack %q", r, r.stack)
			continue
		}
		if r.why == "" && r.ours != r.chartName {
			t.Errorf("row %v: ours %q differs from the chart's %q and the row does not say why", r, r.ours, r.chartName)
		}
		if (r.chart == "-") != (r.chartName == "-") {
			t.Errorf("row %v: a chart name needs a template line, and a template line a name", r)
		}
		key := r.expand(r.resource, stackNames[r.stack])
		covered[r.resource] = true
		want := r.expand(r.ours, stackNames[r.stack])
		if got := chartNamesOf(t, rsp, r.kind, key); !slices.Contains(got, want) {
			t.Errorf("%s %s of %s in stack %s: want %q, have %q", r.kind, r.resource, key, r.stack, want, got)
		}
	}
	for id, rsp := range renders {
		for _, k := range keys(rsp) {
			if p := keyPattern(k, rsp); !covered[p] {
				t.Errorf("stack %s composes %s (%s) and no row of chart-names.tsv names it", id, k, p)
			}
		}
	}
}

// chartNamesOf returns the names of kind in the composed resource key: the
// object's own name for an object kind (which must match), else the names
// of its containers, container ports, Service ports or pod volumes.
func chartNamesOf(t *testing.T, rsp response, kind, key string) []string {
	t.Helper()
	o, ok := rsp.objects[key]
	if !ok {
		t.Errorf("no composed resource %q; have %v", key, keys(rsp))
		return nil
	}
	var names []string
	switch kind {
	case "container", "containerPort", "volume":
		pod := desired(t, rsp, key, &appsv1.Deployment{}).Spec.Template.Spec
		for _, c := range pod.Containers {
			if kind == "container" {
				names = append(names, c.Name)
			}
			for _, p := range c.Ports {
				if kind == "containerPort" {
					names = append(names, p.Name)
				}
			}
		}
		for _, v := range pod.Volumes {
			if kind == "volume" {
				names = append(names, v.Name)
			}
		}
	case "servicePort":
		for _, p := range desired(t, rsp, key, &corev1.Service{}).Spec.Ports {
			names = append(names, p.Name)
		}
	default:
		if got := o.GetObjectKind().GroupVersionKind().Kind; got != kind {
			t.Errorf("%s is a %s, the row says %s", key, got, kind)
		}
		names = append(names, o.(metav1.Object).GetName())
	}
	return names
}

// keyPattern is a composed resource key with its model's name replaced by
// M: engine-llama3-70b-service becomes engine-M-service.
func keyPattern(key string, rsp response) string {
	var models []string
	for _, o := range rsp.objects {
		labels := o.(metav1.Object).GetLabels()
		if labels[names.LabelComponent] == names.ComponentEngine {
			models = append(models, labels[names.LabelName])
		}
	}
	// The longest first, so llama3-70b is not taken for llama3.
	sort.Slice(models, func(i, j int) bool { return len(models[i]) > len(models[j]) })
	for _, m := range models {
		if rest, ok := strings.CutPrefix(key, "engine-"+m); ok && (rest == "" || strings.HasPrefix(rest, "-")) {
			return "engine-M" + rest
		}
	}
	return key
}

// productionStackGitDir is a git mirror of vllm-project/production-stack;
// PRODUCTION_STACK_GIT_DIR overrides it.
const productionStackGitDir = "/work/.mirror/vllm-project+production-stack/repo"

// TestChartNamesCiteTheChart reads each row's template line at the chart's
// tag and checks it spells the row's name: the fixed parts of the pattern
// (around S and M) appear on that line. It needs a git mirror of the chart's
// repository.
func TestChartNamesCiteTheChart(t *testing.T) {
	dir := os.Getenv("PRODUCTION_STACK_GIT_DIR")
	if dir == "" {
		dir = productionStackGitDir
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no git mirror of vllm-project/production-stack at %s (set PRODUCTION_STACK_GIT_DIR)", dir)
	}
	templates := map[string][]string{}
	for _, r := range readChartNames(t) {
		if r.chart == "-" {
			continue
		}
		file, line, _ := strings.Cut(strings.Fields(r.chart)[0], ":")
		n, err := strconv.Atoi(line)
		if err != nil || n < 1 {
			t.Errorf("row %v: chart %q is not file:line", r, r.chart)
			continue
		}
		lines, ok := templates[file]
		if !ok {
			out, err := exec.Command("git", "--git-dir="+dir, "show", "vllm-stack-0.1.12:helm/templates/"+file).Output()
			if err != nil {
				t.Fatalf("git show %s: %v", file, err)
			}
			lines = strings.Split(string(out), "\n")
			templates[file] = lines
		}
		if n > len(lines) {
			t.Errorf("row %v: %s has %d lines", r, file, len(lines))
			continue
		}
		fixed := chartNameRow{model: "\x00"}.expand(r.chartName, "\x00")
		for _, part := range strings.Split(fixed, "\x00") {
			if part != "" && part != "-" && !strings.Contains(lines[n-1], part) {
				t.Errorf("%s is %q, which does not spell %s (no %q)", r.chart, strings.TrimSpace(lines[n-1]), r.chartName, part)
			}
		}
	}
}
