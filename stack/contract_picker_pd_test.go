package stack

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The picker's contract for a disaggregated model (issue 30), held to the
// facts of testdata/upstream (GAIE.md "P/D behind llm-d's picker",
// epp-plugins.tsv, epp-plugin-parameters.tsv, pd-sidecar-flags.tsv), never
// to the function's code: every parameter of the configuration's plugins
// exists at the release; the profile handler names two profiles that
// exist, each with its group's filter, and a decider that exists; the
// prefill endpoint reaches the sidecar (the headers handler before
// v0.9.0); the pool selects exactly the model's prefill and decode pods,
// which the filters tell apart by their role label; the pool's target port
// is the routing sidecar's on decode pods, forwarding to vLLM, and vLLM's
// on prefill pods; every sidecar flag exists at the sidecar's release.

// The role label and the values the filters keep
// (LLMD@v0.7.0..v0.10.0:…/bylabel/roles.go:11-30,47,57; the decode filter
// also keeps a pod without the label).
const pdRoleLabel = "llm-d.ai/role"

var (
	prefillFilterKeeps = []string{"prefill", "encode-prefill", "prefill-decode", "both", "encode-prefill-decode"}
	decodeFilterKeeps  = []string{"decode", "prefill-decode", "both", "encode-prefill-decode", ""}
)

// pdProfiles are the disagg-profile-handler's parameters, nil when the
// configuration has none.
func pdProfiles(cfg map[string]any) map[string]any {
	ps, _ := cfg["plugins"].([]any)
	for _, p := range ps {
		p := p.(map[string]any)
		if p["type"] == "disagg-profile-handler" {
			params, _ := p["parameters"].(map[string]any)
			if params == nil {
				params = map[string]any{}
			}
			return params
		}
	}
	return nil
}

// leaves are the dotted paths of a parameters object's values.
func leaves(prefix string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		*out = append(*out, prefix)
		return
	}
	for k, c := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leaves(p, c, out)
	}
}

func stringAt(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}

// checkPickerPD checks a disaggregated model's picker configuration and
// the pods its pool selects.
func checkPickerPD(r rendered, picker string, v upVersion, cfg, handler map[string]any, pool unstructured.Unstructured, selected []appsv1.Deployment) []string {
	var problems []string
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "epp-plugin-parameters.tsv"), 6)
	if err != nil {
		return []string{err.Error()}
	}
	// Plugins by name (a name defaults to the type), and their parameters.
	plugins := map[string]string{}
	ps, _ := cfg["plugins"].([]any)
	for _, p := range ps {
		p := p.(map[string]any)
		typ, _ := p["type"].(string)
		name, _ := p["name"].(string)
		plugins[cmpOr(name, typ)] = typ
		params, ok := p["parameters"].(map[string]any)
		if !ok || typ == "core-metrics-extractor" { // its engine configs: checkPicker's KV-metric check
			continue
		}
		var paths []string
		leaves("", params, &paths)
		sort.Strings(paths)
		for _, path := range paths {
			if !slices.ContainsFunc(rows, func(row []string) bool {
				return row[0] == picker && row[1] == typ && row[2] == path && v.in(mustUpVersion(row[3]), mustUpVersion(row[4]))
			}) {
				problems = append(problems, fmt.Sprintf("configuration: %s %v's %s has no parameter %s", picker, v, typ, path))
			}
		}
	}
	// The profiles the handler names (its defaults prefill and decode,
	// disagg_profile_handler.go) exist, each with its group's filter; its
	// decider is a plugin of the configuration.
	profiles := map[string][]string{}
	sps, _ := cfg["schedulingProfiles"].([]any)
	for _, sp := range sps {
		sp := sp.(map[string]any)
		refs, _ := sp["plugins"].([]any)
		for _, ref := range refs {
			name, _ := ref.(map[string]any)["pluginRef"].(string)
			profiles[sp["name"].(string)] = append(profiles[sp["name"].(string)], plugins[name])
		}
	}
	for role, filter := range map[string]string{"prefill": "prefill-filter", "decode": "decode-filter"} {
		name := cmpOr(stringAt(handler, "profiles", role), role)
		types, ok := profiles[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("configuration: the profile handler's %s profile %q is no scheduling profile", role, name))
		case !slices.Contains(types, filter):
			problems = append(problems, fmt.Sprintf("configuration: the %s profile %q has no %s", role, name, filter))
		}
	}
	if d := stringAt(handler, "deciders", "prefill"); d == "" || plugins[d] == "" {
		problems = append(problems, fmt.Sprintf("configuration: the profile handler's prefill decider %q is no plugin of the configuration: without one it never disaggregates", d))
	}
	// Up to v0.8.0 only the headers handler sends the prefill endpoint to
	// the sidecar; from v0.9.0 the profile handler does
	// (LLMD@v0.9.0:…/disagg/disagg_profile_handler.go:378).
	hasHeaders := slices.ContainsFunc(slices.Collect(func(yield func(string) bool) {
		for _, t := range plugins {
			if !yield(t) {
				return
			}
		}
	}), func(t string) bool { return t == "disagg-headers-handler" || t == "prefill-header-handler" })
	if v.in(upVersion{}, upVersion{0, 8, 99}) && !hasHeaders {
		problems = append(problems, fmt.Sprintf("configuration: %s %v sets the x-prefiller-host-port header only with the disagg-headers-handler, which it lacks", picker, v))
	}

	// The pool selects the model's groups, every one, told apart by role.
	roles := map[string]bool{}
	served := map[string]bool{}
	for _, d := range r.withContainer(build.EngineContainer) {
		if _, labelled := d.Spec.Template.Labels[pdRoleLabel]; labelled && !slices.ContainsFunc(selected, func(s appsv1.Deployment) bool { return s.Name == d.Name }) {
			problems = append(problems, fmt.Sprintf("InferencePool %s does not select %s, a group of the model", pool.GetName(), d.Name))
		}
	}
	targets, _, _ := unstructured.NestedSlice(pool.Object, "spec", "targetPorts")
	var target int64
	if len(targets) == 1 {
		target, _, _ = unstructured.NestedInt64(targets[0].(map[string]any), "number")
	}
	for _, d := range selected {
		role := d.Spec.Template.Labels[pdRoleLabel]
		roles[role] = true
		c, _ := containerNamed(d, build.EngineContainer)
		name, ok := stacktest.ArgValue(c.Args, "--served-model-name")
		if !ok && len(c.Args) > 0 {
			name = c.Args[0]
		}
		served[name] = true
		keptPrefill, keptDecode := slices.Contains(prefillFilterKeeps, role), slices.Contains(decodeFilterKeeps, role)
		if kv, _ := stacktest.ArgValue(c.Args, "--kv-transfer-config"); !strings.Contains(kv, `"kv_connector":"NixlConnector"`) {
			problems = append(problems, fmt.Sprintf("%s: vLLM's --kv-transfer-config %s is not NixlConnector, the sidecar's nixlv2", d.Name, kv))
		}
		vllmPort, _ := stacktest.ArgValue(c.Args, "--port")
		switch {
		case keptPrefill && !keptDecode: // a prefill pod: vLLM on the target port
			if vllmPort != fmt.Sprint(target) {
				problems = append(problems, fmt.Sprintf("%s: a prefill pod's vLLM listens on %s, and the pool targets %d", d.Name, vllmPort, target))
			}
		case keptDecode && !keptPrefill: // a decode pod: the sidecar on the target port, forwarding to vLLM
			problems = append(problems, checkSidecar(d, target, vllmPort)...)
		default:
			problems = append(problems, fmt.Sprintf("%s: %s=%q is kept by the prefill filter %v and the decode filter %v: want exactly one", d.Name, pdRoleLabel, role, keptPrefill, keptDecode))
		}
	}
	if !roles["prefill"] || !roles["decode"] || len(roles) != 2 {
		problems = append(problems, fmt.Sprintf("InferencePool %s selects pods of roles %v, want prefill and decode", pool.GetName(), roles))
	}
	if len(served) != 1 {
		problems = append(problems, fmt.Sprintf("InferencePool %s selects pods serving %v, want one model", pool.GetName(), served))
	}
	return problems
}

// checkSidecar checks a decode pod's routing sidecar against
// pd-sidecar-flags.tsv at its image's release: it listens on the pool's
// target port and forwards to vLLM's, plain HTTP, nixlv2; every flag
// exists, with a value of its kind, not deprecated; the image is the name
// llm-d published that release under.
func checkSidecar(d appsv1.Deployment, target int64, vllmPort string) []string {
	var sc *corev1.Container
	for i, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if int64(p.ContainerPort) == target {
				sc = &d.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if sc == nil || sc.Name == build.EngineContainer {
		return []string{fmt.Sprintf("%s: no sidecar container has the pool's target port %d", d.Name, target)}
	}
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "pd-sidecar-flags.tsv"), 7)
	if err != nil {
		return []string{err.Error()}
	}
	repo, tag, _ := strings.Cut(sc.Image, ":")
	v, err := parseUpVersion(strings.TrimPrefix(tag, "v"))
	if err != nil {
		return []string{fmt.Sprintf("%s: sidecar image %s names no release", d.Name, sc.Image)}
	}
	// The names llm-d published the sidecar under
	// (LLMD@v0.6.0..v0.8.0:.github/workflows/ci-release.yaml:24,
	// LLMD@v0.9.0..v0.10.0:same:29-30 with the repository llm-d-router).
	wantRepo := "ghcr.io/llm-d/llm-d-router-disagg-sidecar"
	if v.in(upVersion{}, upVersion{0, 8, 99}) {
		wantRepo = "ghcr.io/llm-d/llm-d-routing-sidecar"
	}
	var problems []string
	if repo != wantRepo {
		problems = append(problems, fmt.Sprintf("%s: sidecar image %s, and llm-d published %v's as %s", d.Name, sc.Image, v, wantRepo))
	}
	args := map[string]string{}
	for _, a := range sc.Args {
		name, value, ok := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") || !ok {
			problems = append(problems, fmt.Sprintf("sidecar argument %q is not --flag=value", a))
			continue
		}
		name = strings.TrimPrefix(name, "--")
		args[name] = value
		i := slices.IndexFunc(rows, func(row []string) bool {
			return row[0] == name && v.in(mustUpVersion(row[1]), mustUpVersion(row[2]))
		})
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("the sidecar of llm-d %v has no flag --%s", v, name))
		case rows[i][5] != "ok":
			problems = append(problems, fmt.Sprintf("the sidecar of llm-d %v: --%s is %s", v, name, rows[i][5]))
		case flagValue[rows[i][3]] != nil && !flagValue[rows[i][3]].MatchString(value):
			problems = append(problems, fmt.Sprintf("sidecar --%s=%s is not a %s", name, value, rows[i][3]))
		}
	}
	// Unset flags take the release's default.
	get := func(name string) string {
		if a, ok := args[name]; ok {
			return a
		}
		for _, row := range rows {
			if row[0] == name && v.in(mustUpVersion(row[1]), mustUpVersion(row[2])) {
				return row[4]
			}
		}
		return ""
	}
	if get("port") != fmt.Sprint(target) {
		problems = append(problems, fmt.Sprintf("%s: the sidecar listens on %s, and the pool targets %d", d.Name, get("port"), target))
	}
	to := get("vllm-port")
	if _, ok := args["model-server-port"]; ok || v.in(upVersion{0, 10, 0}, upVersion{99}) && args["vllm-port"] == "" {
		to = get("model-server-port")
	}
	if to != vllmPort {
		problems = append(problems, fmt.Sprintf("%s: the sidecar forwards to port %s, and vLLM listens on %s", d.Name, to, vllmPort))
	}
	if get("secure-proxy") != "false" {
		problems = append(problems, fmt.Sprintf("%s: the sidecar serves TLS (--secure-proxy %s), and the gateway sends the pool's pods plain HTTP", d.Name, get("secure-proxy")))
	}
	if c := cmpOr(args["kv-connector"], get("connector")); c != "nixlv2" {
		problems = append(problems, fmt.Sprintf("%s: the sidecar's connector %q is not nixlv2, vLLM's NixlConnector", d.Name, c))
	}
	c, _ := containerNamed(d, build.EngineContainer)
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != vllmPort {
			problems = append(problems, fmt.Sprintf("%s: vLLM's %s probe does not reach vLLM on %s", d.Name, name, vllmPort))
		}
	}
	return problems
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestPickerPDContract renders the disaggregated inference extension
// example with every llm-d release the facts cover with P/D and checks
// each against them.
func TestPickerPDContract(t *testing.T) {
	for _, v := range []string{"0.7.0", "0.8.0", "0.9.0", "0.10.0"} {
		xr := stacktest.LoadXR(t, "../example/stacks/disaggregated-inference-extension.yaml", "")
		stacktest.SetPath(xr, "spec.inferenceExtension.picker", map[string]any{"image": "ghcr.io/llm-d/llm-d-router-endpoint-picker:v" + v})
		rsp := reconciled(t, xr, nil)
		if rsp.refusal != "" {
			t.Errorf("v%s: refused: %s", v, rsp.refusal)
			continue
		}
		r := renderedOf(rsp)
		pickers := r.withComponent(names.ComponentPicker)
		if len(pickers) != 1 {
			t.Errorf("v%s: %d pickers, want one for the model", v, len(pickers))
		}
		for _, d := range pickers {
			for _, p := range checkPicker(d, r, "0.12.0") {
				t.Errorf("llm-d v%s: %s: %s", v, d.Name, p)
			}
		}
	}
}
