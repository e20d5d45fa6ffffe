package stack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The endpoint picker's own flag validation (issue 38 §4): each release's
// Validate, as testdata/upstream/epp-validation.tsv records it, applied to
// the command line the stack renders for that release. A rendered picker
// that its release would refuse exits at start.

// pickerRule is a row of epp-validation.tsv.
type pickerRule struct {
	picker      string
	first, last upVersion
	rule        string
	flags       []string
	values      string
}

func loadPickerRules() ([]pickerRule, error) {
	rows, err := readReleaseRows("epp-validation.tsv", 8, 1)
	if err != nil {
		return nil, err
	}
	var out []pickerRule
	for _, r := range rows {
		out = append(out, pickerRule{picker: r.cols[0], first: r.first, last: r.last, rule: r.cols[3], flags: strings.Split(r.cols[4], ","), values: r.cols[5]})
	}
	return out, nil
}

// checkPickerValidation applies release v's rules to a command line's set
// flags (name to value).
func checkPickerValidation(rules []pickerRule, picker string, v upVersion, set map[string]string) []string {
	var problems []string
	for _, r := range rules {
		if r.picker != picker || !v.in(r.first, r.last) {
			continue
		}
		var present []string
		for _, f := range r.flags {
			if _, ok := set[f]; ok {
				present = append(present, f)
			}
		}
		refuse := func(format string, a ...any) {
			problems = append(problems, fmt.Sprintf("%s %v exits at start: ", picker, v)+fmt.Sprintf(format, a...))
		}
		switch r.rule {
		case "refused-if-set":
			for _, f := range present {
				refuse("its Validate refuses %s set at all", f)
			}
		case "unchecked":
			for _, f := range present {
				refuse("%s is set, and its Validate checks it in ways epp-validation.tsv does not evaluate", f)
			}
		case "exactly-one":
			if n := len(slices.DeleteFunc(slices.Clone(present), func(f string) bool { return set[f] == "" })); n != 1 {
				refuse("exactly one of %s must be set, %d are", strings.Join(r.flags, ", "), n)
			}
		case "at-most-one":
			if len(present) > 1 {
				refuse("at most one of %s may be set, %s are", strings.Join(r.flags, ", "), strings.Join(present, ", "))
			}
		case "at-least-one":
			if len(present) == 0 {
				refuse("one of %s must be set", strings.Join(r.flags, ", "))
			}
		case "values":
			for _, f := range present {
				if !slices.Contains(strings.Split(r.values, "|"), set[f]) {
					refuse("%s=%s is none of %s", f, set[f], r.values)
				}
			}
		case "requires":
			if _, ok := set[r.flags[0]]; !ok {
				continue
			}
			lo, hi, _ := strings.Cut(r.values, "-")
			n := 0
			if val, ok := set[r.flags[1]]; ok && val != "" {
				n = len(strings.Split(val, ","))
			}
			if min, _ := strconv.Atoi(lo); n < min {
				refuse("%s needs %s with %s items, it has %d", r.flags[0], r.flags[1], r.values, n)
			} else if max, _ := strconv.Atoi(hi); n > max {
				refuse("%s needs %s with %s items, it has %d", r.flags[0], r.flags[1], r.values, n)
			}
		default:
			problems = append(problems, fmt.Sprintf("epp-validation.tsv: rule %q has no check", r.rule))
		}
	}
	return problems
}

// pickerDataLayer is how a release reads engine metrics through its
// configuration (GAIE.md §b, §c): the extractor's plugin type, the key of
// the data layer's sources, and whether the layer needs its feature gate
// (experimental before GAIE v1.5.0 and llm-d v0.8.0; llm-d v0.6.0 has it
// but accepts the metric flags, so the stack never configures it there).
func pickerDataLayer(picker string, v upVersion) (extractor, key string, gated bool) {
	if (picker == "gaie" && v.in(upVersion{1, 5, 0}, upVersion{99})) || (picker == "llm-d" && v.in(upVersion{0, 8, 0}, upVersion{99})) {
		return "core-metrics-extractor", "dataLayer", false
	}
	return "model-server-protocol-metrics", "data", true
}

// checkPickerDataLayer checks a configuration's metrics extractor: named
// as a source's extractor under the release's key, with the feature gate
// where the layer is experimental (without it the picker refuses the
// configured extractor, "disallowed Extractor", GAIE@v1.4.0:pkg/epp/datalayer/config.go:54-55).
// It returns whether the extractor is in use, and problems.
func checkPickerDataLayer(cfg map[string]any, picker string, v upVersion) (bool, []string) {
	extractor, key, gated := pickerDataLayer(picker, v)
	ps, _ := cfg["plugins"].([]any)
	if !slices.ContainsFunc(ps, func(p any) bool { return p.(map[string]any)["type"] == extractor }) {
		return false, nil
	}
	var problems []string
	layer, _ := cfg[key].(map[string]any)
	sources, _ := layer["sources"].([]any)
	used := false
	for _, s := range sources {
		exs, _ := s.(map[string]any)["extractors"].([]any)
		for _, e := range exs {
			if e.(map[string]any)["pluginRef"] == extractor {
				used = true
			}
		}
	}
	if !used {
		problems = append(problems, fmt.Sprintf("configuration: plugin %s is no extractor of a source under %s:", extractor, key))
	}
	gates, _ := cfg["featureGates"].([]any)
	if gated && !slices.Contains(gates, any("dataLayer")) {
		problems = append(problems, fmt.Sprintf("configuration: %s %v refuses extractor %s without feature gate dataLayer", picker, v, extractor))
		used = false
	}
	return used, problems
}

// pickerReleases are the releases of both pickers the facts cover, by
// image repository.
var pickerReleases = map[string][]string{
	"registry.k8s.io/gateway-api-inference-extension/epp": {"1.3.0", "1.4.0", "1.5.0"},
	"ghcr.io/llm-d/llm-d-router-endpoint-picker":          {"0.6.0", "0.7.0", "0.8.0", "0.9.0", "0.10.0"},
}

// TestPickerReleasesContract renders every stack with the inference
// extension at every release of both pickers and every vLLM release, and
// holds each picker to its release's facts (checkPicker), its flag
// validation included: a release that would refuse the command line the
// stack renders for it fails here.
func TestPickerReleasesContract(t *testing.T) {
	checked := 0
	for _, path := range stacktest.Stacks(t) {
		if _, ok := stacktest.LoadXR(t, path, "")["spec"].(map[string]any)["inferenceExtension"]; !ok {
			continue
		}
		for repo, vs := range pickerReleases {
			for _, v := range vs {
				for _, vllm := range stacktest.VLLMReleases {
					xr := stacktest.LoadXR(t, path, "")
					stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", repo+":v"+v)
					pinVersions(xr, vllm, "0.1.12")
					rsp := reconciled(t, xr, stacktest.InputFor(xr))
					name := fmt.Sprintf("%s: %s:v%s, vLLM %s", path, repo, v, vllm)
					if rsp.refusal != "" {
						if !namesVersion(rsp.refusal, v) && !namesVersion(rsp.refusal, vllm) {
							t.Errorf("%s: refused without naming the release it refuses: %s", name, rsp.refusal)
						}
						continue
					}
					r := renderedOf(rsp)
					for _, d := range r.withComponent(names.ComponentPicker) {
						checked++
						for _, p := range checkPicker(d, r, vllm) {
							t.Errorf("%s: %s: %s", name, d.Name, p)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no picker was checked")
	}
}
