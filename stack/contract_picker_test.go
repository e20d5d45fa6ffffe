package stack

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The endpoint picker's contract (issue 30): what the stack renders for
// it, held to the facts of testdata/upstream (epp-flags.tsv,
// epp-plugins.tsv, GAIE.md), read here, never from the function's code:
// every flag exists at the picker's release with a value of its kind, every
// plugin of its configuration exists at that release and the configuration
// has the apiVersion that release decodes, its Role grants what it reads,
// and its pool selects exactly one model's serving pods through a Service
// that reaches the picker's ext-proc port.

// pickerRow is a row of epp-flags.tsv or epp-plugins.tsv.
type pickerRow struct {
	picker, name string
	first, last  upVersion
	kind, status string
}

func loadPickerTable(name string, cols int) ([]pickerRow, error) {
	rows, err := readReleaseRows(name, cols, 2)
	if err != nil {
		return nil, err
	}
	var out []pickerRow
	for _, r := range rows {
		row := pickerRow{picker: r.cols[0], name: r.cols[1], first: r.first, last: r.last}
		if cols > 5 {
			row.kind, row.status = r.cols[4], r.cols[6]
		}
		out = append(out, row)
	}
	return out, nil
}

// A releaseRow is a row of a facts table whose columns at and after
// firstCol are the first and last release the row holds for.
type releaseRow struct {
	first, last upVersion
	cols        []string
}

// readReleaseRows reads such a table of testdata/upstream.
func readReleaseRows(name string, cols, firstCol int) ([]releaseRow, error) {
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, name), cols)
	if err != nil {
		return nil, err
	}
	var out []releaseRow
	for _, r := range rows {
		first, err1 := parseUpVersion(r[firstCol])
		last, err2 := parseUpVersion(r[firstCol+1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: %v: bad release", name, r)
		}
		out = append(out, releaseRow{first: first, last: last, cols: r})
	}
	return out, nil
}

// pickerImage is the picker and release an image runs, as the facts name
// them: the two pickers' repositories, a release tag.
var pickerImage = regexp.MustCompile(`(llm-d-router-endpoint-picker|gateway-api-inference-extension/epp):v(\d+\.\d+\.\d+)$`)

func pickerOf(image string) (string, upVersion, error) {
	m := pickerImage.FindStringSubmatch(image)
	if m == nil {
		return "", upVersion{}, fmt.Errorf("image %s is no release of either picker", image)
	}
	v, err := parseUpVersion(m[2])
	if m[1] == "llm-d-router-endpoint-picker" {
		return "llm-d", v, err
	}
	return "gaie", v, err
}

func atRelease(rows []pickerRow, picker, name string, v upVersion) (pickerRow, bool) {
	for _, r := range rows {
		if r.picker == picker && r.name == name && v.in(r.first, r.last) {
			return r, true
		}
	}
	return pickerRow{}, false
}

var flagValue = map[string]*regexp.Regexp{
	"bool":     regexp.MustCompile(`^(true|false)$`),
	"int":      regexp.MustCompile(`^[0-9]+$`),
	"duration": regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`),
	"string":   regexp.MustCompile(`^.*$`),
}

// checkPicker checks one picker Deployment of a rendered stack.
func checkPicker(d appsv1.Deployment, r rendered, vllm string) []string {
	flags, err := loadPickerTable("epp-flags.tsv", 8)
	if err != nil {
		return []string{err.Error()}
	}
	plugins, err := loadPickerTable("epp-plugins.tsv", 5)
	if err != nil {
		return []string{err.Error()}
	}
	c := d.Spec.Template.Spec.Containers[0]
	picker, v, perr := pickerOf(c.Image)
	err = perr
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	args := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") || !ok {
			problems = append(problems, fmt.Sprintf("argument %q is not --flag=value", a))
			continue
		}
		row, known := atRelease(flags, picker, name, v)
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("%s %v has no flag %s", picker, v, name))
		case flagValue[row.kind] == nil:
			problems = append(problems, fmt.Sprintf("%s: kind %q has no value check", name, row.kind))
		case !flagValue[row.kind].MatchString(value):
			problems = append(problems, fmt.Sprintf("%s=%s is not a %s", name, value, row.kind))
		}
		args[name] = value
	}
	// The release's own validation of its flags (epp-validation.tsv).
	validation, err := loadPickerRules()
	if err != nil {
		return append(problems, err.Error())
	}
	problems = append(problems, checkPickerValidation(validation, picker, v, args)...)
	// The configuration: apiVersion and plugins at the release (GAIE.md §b).
	var cfg map[string]any
	for _, cm := range r.configMaps {
		if strings.HasSuffix(args["--config-file"], "/config.yaml") && slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(vol corev1.Volume) bool {
			return vol.ConfigMap != nil && vol.ConfigMap.Name == cm.Name
		}) {
			if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
				problems = append(problems, "configuration: "+err.Error())
			}
		}
	}
	if cfg == nil {
		return append(problems, "no configuration mounted where --config-file names it")
	}
	wantAPI := "inference.networking.x-k8s.io/v1alpha1"
	if picker == "llm-d" && v.in(upVersion{0, 9, 0}, upVersion{99}) {
		wantAPI = "llm-d.ai/v1alpha1" // LLMD@v0.9.0:apix/config/v1alpha1/zz_generated.register.go:15-18
	}
	if cfg["apiVersion"] != wantAPI || cfg["kind"] != "EndpointPickerConfig" {
		problems = append(problems, fmt.Sprintf("configuration is %v %v, want %s EndpointPickerConfig", cfg["apiVersion"], cfg["kind"], wantAPI))
	}
	ps, _ := cfg["plugins"].([]any)
	for _, p := range ps {
		typ, _ := p.(map[string]any)["type"].(string)
		if _, ok := atRelease(plugins, picker, typ, v); !ok {
			problems = append(problems, fmt.Sprintf("configuration: %s %v has no plugin %s", picker, v, typ))
		}
	}
	// The KV-cache metric it reads is one the engines' vLLM exports
	// (GAIE.md §c): the flag, else the vllm engine config of the
	// configuration's extractor, else the release's default.
	kv := "vllm:kv_cache_usage_perc"
	if picker == "gaie" && v.in(upVersion{}, upVersion{1, 2, 99}) {
		kv = "vllm:gpu_cache_usage_perc"
	}
	extracting, p := checkPickerDataLayer(cfg, picker, v)
	problems = append(problems, p...)
	extractor, _, _ := pickerDataLayer(picker, v)
	for _, p := range ps {
		if p := p.(map[string]any); !extracting || p["type"] != extractor {
			continue
		}
		params, _ := p.(map[string]any)["parameters"].(map[string]any)
		ecs, _ := params["engineConfigs"].([]any)
		for _, ec := range ecs {
			if ec := ec.(map[string]any); ec["name"] == "vllm" {
				kv, _ = ec["kvUsageSpec"].(string)
			}
		}
	}
	if f, ok := args["--kv-cache-usage-percentage-metric"]; ok {
		kv = f
	}
	ev := mustUpVersion(vllm)
	exported := map[string]bool{
		"vllm:gpu_cache_usage_perc": ev.in(upVersion{}, upVersion{0, 10, 99}),
		"vllm:kv_cache_usage_perc":  ev.in(upVersion{0, 9, 2}, upVersion{99}),
	}
	if !exported[kv] {
		problems = append(problems, fmt.Sprintf("it reads KV-cache use from %s, which vLLM %s does not export", kv, vllm))
	}
	// What it reads (GAIE.md §d), granted to its ServiceAccount.
	rules := r.rulesOf(d.Spec.Template.Spec.ServiceAccountName)
	for _, need := range []struct{ group, resource string }{{"", "pods"}, {"inference.networking.k8s.io", "inferencepools"}} {
		for _, verb := range []string{"list", "watch"} {
			if !grants(rules, need.group, need.resource, verb) {
				problems = append(problems, fmt.Sprintf("its Role does not grant %s on %s", verb, need.resource))
			}
		}
	}
	// Its pool selects one model's serving pods, and names a Service that
	// reaches the picker's ext-proc port.
	pool, ok := r.inferencePool(args["--pool-name"])
	if !ok {
		return append(problems, fmt.Sprintf("--pool-name %s names no InferencePool of the stack", args["--pool-name"]))
	}
	problems = append(problems, checkObjectives(r, picker, v, pool, args["--pool-group"], rules)...)
	sel, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "selector", "matchLabels")
	models := map[string]bool{}
	var selected []appsv1.Deployment
	for _, e := range r.withContainer(build.EngineContainer) {
		if k8slabels.SelectorFromSet(sel).Matches(k8slabels.Set(e.Spec.Template.Labels)) && !headless(e) {
			models[e.Spec.Template.Labels[names.LabelModel]] = true
			selected = append(selected, e)
		}
	}
	if pd := pdProfiles(cfg); pd != nil {
		// A disaggregated model: its prefill and decode groups, checked
		// against the P/D facts.
		problems = append(problems, checkPickerPD(r, picker, v, cfg, pd, pool, selected)...)
	} else if len(models) != 1 {
		problems = append(problems, fmt.Sprintf("InferencePool %s selects the serving pods of %d models, want 1", pool.GetName(), len(models)))
	}
	problems = append(problems, checkPickerPrecise(r, picker, v, vllm, cfg, pool, selected)...)
	ref, _, _ := unstructured.NestedString(pool.Object, "spec", "endpointPickerRef", "name")
	port, _, _ := unstructured.NestedInt64(pool.Object, "spec", "endpointPickerRef", "port", "number")
	reached := false
	for _, s := range r.services {
		if s.Name != ref || !k8slabels.SelectorFromSet(s.Spec.Selector).Matches(k8slabels.Set(d.Spec.Template.Labels)) {
			continue
		}
		for _, sp := range s.Spec.Ports {
			if int64(sp.Port) == port && sp.TargetPort.IntValue() == atoiOr(args["--grpc-port"], 9002) {
				reached = true
			}
		}
	}
	if !reached {
		problems = append(problems, fmt.Sprintf("InferencePool %s's endpointPickerRef %s:%d does not reach the picker's --grpc-port", pool.GetName(), ref, port))
	}
	return problems
}

// checkObjectives checks the InferenceObjectives of a picker's pool
// against epp-objectives.tsv: each in the apiVersion the release watches,
// its poolRef naming the pool in the picker's --pool-group (the picker
// keeps no other), an integer priority; and the picker's Role lets it list
// and watch them.
func checkObjectives(r rendered, picker string, v upVersion, pool unstructured.Unstructured, poolGroup string, rules []rbacv1.PolicyRule) []string {
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "epp-objectives.tsv"), 6)
	if err != nil {
		return []string{err.Error()}
	}
	var want string
	for _, row := range rows {
		if first, last := mustUpVersion(row[2]), mustUpVersion(row[3]); row[0] == picker && v.in(first, last) {
			want = row[1]
		}
	}
	var problems []string
	for _, o := range r.crs {
		if o.GetKind() != "InferenceObjective" {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "poolRef")
		if ref["name"] != pool.GetName() {
			continue
		}
		if want == "" {
			problems = append(problems, fmt.Sprintf("InferenceObjective %s: %s %v watches no InferenceObjectives", o.GetName(), picker, v))
			continue
		}
		if o.GetAPIVersion() != want {
			problems = append(problems, fmt.Sprintf("InferenceObjective %s is %s, and %s %v watches %s", o.GetName(), o.GetAPIVersion(), picker, v, want))
		}
		if ref["group"] != poolGroup || ref["kind"] != "InferencePool" || o.GetNamespace() != pool.GetNamespace() {
			problems = append(problems, fmt.Sprintf("InferenceObjective %s's poolRef %v is not the picker's pool %s/%s of group %s", o.GetName(), ref, pool.GetNamespace(), pool.GetName(), poolGroup))
		}
		if _, ok, err := unstructured.NestedInt64(o.Object, "spec", "priority"); !ok || err != nil {
			problems = append(problems, fmt.Sprintf("InferenceObjective %s has no integer spec.priority", o.GetName()))
		}
		group, _, _ := strings.Cut(o.GetAPIVersion(), "/")
		for _, verb := range []string{"list", "watch"} {
			if !grants(rules, group, "inferenceobjectives", verb) {
				problems = append(problems, fmt.Sprintf("its Role does not grant %s on %s inferenceobjectives", verb, group))
			}
		}
	}
	return problems
}

func (r rendered) inferencePool(name string) (unstructured.Unstructured, bool) {
	for _, o := range r.crs {
		if o.GetKind() == "InferencePool" && o.GetName() == name {
			return o, true
		}
	}
	return unstructured.Unstructured{}, false
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return def
	}
	return n
}

// TestPickerContract renders the inference extension's example with every
// release of both pickers the facts cover and checks each against them.
func TestPickerContract(t *testing.T) {
	releases := map[string][]string{
		"registry.k8s.io/gateway-api-inference-extension/epp": {"1.3.0", "1.4.0", "1.5.0"},
		"ghcr.io/llm-d/llm-d-router-endpoint-picker":          {"0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.10.0"},
	}
	for repo, vs := range releases {
		for _, v := range vs {
			for _, vllm := range []string{"0.8.5", "0.9.2", "0.12.0"} {
				xr := stacktest.LoadXR(t, "../example/stacks/inference-extension.yaml", "")
				stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", repo+":v"+v)
				stacktest.SetPath(xr, "spec.vllmConfig.image", "vllm/vllm-openai:v"+vllm)
				// Every model with objectives, whatever the example has.
				for _, m := range xr["spec"].(map[string]any)["models"].([]any) {
					m.(map[string]any)["inferenceObjectives"] = []any{map[string]any{"name": "interactive", "priority": 10}, map[string]any{"name": "batch", "priority": -1}}
				}
				rsp := reconciled(t, xr, nil)
				if rsp.refusal != "" {
					t.Errorf("%s:v%s: refused: %s", repo, v, rsp.refusal)
					continue
				}
				r := renderedOf(rsp)
				if n := len(slices.DeleteFunc(slices.Clone(r.crs), func(o unstructured.Unstructured) bool { return o.GetKind() != "InferenceObjective" })); n != 4 {
					t.Errorf("%s:v%s: %d InferenceObjectives, want two per model: the contract checks them", repo, v, n)
				}
				pickers := r.withComponent(names.ComponentPicker)
				if len(pickers) != 2 {
					t.Errorf("%s:v%s: %d pickers, want one per model", repo, v, len(pickers))
				}
				for _, d := range pickers {
					for _, p := range checkPicker(d, r, vllm) {
						t.Errorf("%s:v%s, vLLM %s: %s: %s", repo, v, vllm, d.Name, p)
					}
				}
			}
		}
	}
}
