// Package argvcheck is the argument-injection invariant of the function's
// tests (issue 18): every value a stack's spec gives vLLM or the router must
// land, once the rendered command line is parsed as argparse parses it, in
// exactly the option or positional it was meant for. It reads the option
// tables of stack/testdata/upstream (which options exist, which take a value,
// which a list) and the rendered objects, never the function's code. Used by
// fn's tests (every example stack, hostile values) and test/fuzz
// (FuzzRunFunction: every accepted fuzzed stack).
package argvcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Table is what one program's parser takes: for each long option, by kind
// (value, values, json, store_true, boolopt, storebool), the kinds it has in
// any release. An option that takes a value in one release and none in
// another is parsed both ways.
type Table map[string][]string

// LoadTable reads a flag table of stack/testdata/upstream (columns name,
// first, last, kind, choices, source).
func LoadTable(path string) (Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := Table{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n")[1:] {
		if strings.HasPrefix(line, "#") {
			continue
		}
		r := strings.Split(line, "\t")
		if len(r) != 6 {
			return nil, fmt.Errorf("%s: %d columns in %q, want 6", path, len(r), line)
		}
		if strings.HasPrefix(r[0], "--") && !slices.Contains(t[r[0]], r[3]) {
			t[r[0]] = append(t[r[0]], r[3])
		}
	}
	return t, nil
}

// Parsed is what argparse makes of a command line: its positionals and,
// per option, the values of each occurrence.
type Parsed struct {
	Positionals []string
	Options     map[string][][]string
}

// optionLike is how argparse classifies an element: one that starts with
// '-' (and is more than "-") is an option, never a value.
func optionLike(s string) bool { return len(s) > 1 && s[0] == '-' }

// Parse reads args as argparse does, taking the kinds of each option from
// kind (one per option; unknown options take no value). After "--" every
// element is a positional.
func Parse(args []string, kind func(name string) string) Parsed {
	p := Parsed{Options: map[string][][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.Positionals = append(p.Positionals, args[i+1:]...)
			return p
		case !optionLike(a):
			p.Positionals = append(p.Positionals, a)
			continue
		}
		name, inline, has := strings.Cut(a, "=")
		if has && strings.HasPrefix(a, "--") {
			p.Options[name] = append(p.Options[name], []string{inline})
			continue
		}
		var values []string
		switch kind(a) {
		case "value", "json":
			if i+1 < len(args) && !optionLike(args[i+1]) {
				values, i = args[i+1:i+2], i+1
			}
		case "storebool":
			if i+1 < len(args) && !optionLike(args[i+1]) {
				values, i = args[i+1:i+2], i+1
			}
		case "values":
			for i+1 < len(args) && !optionLike(args[i+1]) {
				values, i = append(values, args[i+1]), i+1
			}
		}
		p.Options[a] = append(p.Options[a], values)
	}
	return p
}

// Overridden reports every option of wants that an element of the user's
// extraArgs gives again, after the stack's: argparse keeps the last
// occurrence, so the spec's value would not be the one the program reads.
// name is the option a program reads an element as. Checked for vLLM,
// whose extraArgs the function refuses so (issue 29); the router's
// extraArgs are not yet.
func Overridden(wants []Want, extra []string, name func(string) string) []string {
	var problems []string
	for _, w := range wants {
		if w.Option == "" {
			continue
		}
		for _, a := range extra {
			if optionLike(a) && name(a) == name(w.Option) {
				problems = append(problems, fmt.Sprintf("%s: extraArgs %q give %s again, after the stack's", w.Field, a, w.Option))
			}
		}
	}
	return problems
}

// VLLMOption is the long option vLLM's FlexibleArgumentParser reads an
// element as: the name before '=' and before a '.', its underscores as
// dashes, --no-name as --name (FACTS §2; stack/validate/extraargs.go's sources).
// Short aliases and abbreviations are not read here.
func VLLMOption(a string) string {
	if !strings.HasPrefix(a, "--") {
		return a
	}
	name, _, _ := strings.Cut(a, "=")
	name, _, _ = strings.Cut(name, ".")
	name = strings.ReplaceAll(name, "_", "-")
	if rest, ok := strings.CutPrefix(name, "--no-"); ok && rest != "" {
		name = "--" + rest
	}
	return name
}

// Want is one value of the spec on a command line: Option (with its "--")
// must occur once and hold exactly Values, or, with Option "", the
// positionals must be exactly Values. Decode, if set, maps each parsed value
// to what the program reads from it before comparing.
type Want struct {
	Field  string
	Option string
	Values []string
	Decode func(string) (string, error)
}

// Check parses args (without the user's extraArgs, which must be their
// tail) with every combination of kinds table t has for an option, and
// reports every Want that does not land, and every value of the spec that
// was read as an option.
func Check(t Table, args, extra []string, wants []Want, positionals bool) []string {
	n := len(args) - len(extra)
	if n < 0 || !slices.Equal(args[n:], extra) {
		return []string{fmt.Sprintf("extraArgs %q are not the last arguments of %q", extra, args)}
	}
	args = args[:n]
	var problems []string
	for _, pick := range []func([]string) string{firstKind, lastKind} {
		kind := func(name string) string {
			if ks, ok := t[name]; ok {
				return pick(ks)
			}
			return ""
		}
		p := Parse(args, kind)
		problems = append(problems, check(p, wants, positionals)...)
		if len(problems) > 0 {
			return problems
		}
	}
	return nil
}

func firstKind(ks []string) string { return ks[0] }
func lastKind(ks []string) string  { return ks[len(ks)-1] }

func check(p Parsed, wants []Want, positionals bool) []string {
	var problems []string
	wantPos := false
	for _, w := range wants {
		var got []string
		if w.Option == "" {
			wantPos, got = true, p.Positionals
		} else {
			occ := p.Options[w.Option]
			if len(occ) != 1 {
				problems = append(problems, fmt.Sprintf("%s: %s occurs %d times, want once holding %q", w.Field, w.Option, len(occ), w.Values))
				continue
			}
			got = occ[0]
		}
		if w.Decode != nil {
			decoded := make([]string, 0, len(got))
			for _, g := range got {
				d, err := w.Decode(g)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %s %q: %v", w.Field, or(w.Option, "positional"), g, err))
				}
				decoded = append(decoded, d)
			}
			got = decoded
		}
		if !slices.Equal(got, w.Values) {
			problems = append(problems, fmt.Sprintf("%s: %s holds %q, want %q", w.Field, or(w.Option, "the positionals"), got, w.Values))
		}
		for _, v := range w.Values {
			if _, ok := p.Options[v]; ok && optionLike(v) {
				problems = append(problems, fmt.Sprintf("%s: its value %q was read as an option", w.Field, v))
			}
		}
	}
	if !wantPos && positionals && len(p.Positionals) > 0 {
		problems = append(problems, fmt.Sprintf("positionals %q that no field asked for", p.Positionals))
	}
	if !positionals && len(p.Positionals) > 0 {
		problems = append(problems, fmt.Sprintf("positionals %q: the program takes none", p.Positionals))
	}
	return problems
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// LoRAModule is what vLLM reads from one --lora-modules item (LoRAParserAction,
// FACTS §2.1): name=path when the item has an '=' and no ',' (split at every
// '=', so exactly one), else a JSON object with name and path. The result is
// "name=path".
func LoRAModule(item string) (string, error) {
	if strings.Contains(item, "=") && !strings.Contains(item, ",") {
		parts := strings.Split(item, "=")
		if len(parts) != 2 {
			return "", fmt.Errorf("vLLM cannot split it into name=path")
		}
		return parts[0] + "=" + parts[1], nil
	}
	var m struct{ Name, Path string }
	if err := json.Unmarshal([]byte(item), &m); err != nil {
		return "", fmt.Errorf("neither name=path nor JSON: %v", err)
	}
	return m.Name + "=" + m.Path, nil
}

// Engine is the model a Deployment of vLLM serves, and the values its
// command line must carry.
type Engine struct {
	Model string // the model's name (the pods' label "model" when it is a label value)
	Wants []Want
	Extra []string
}

// EngineWants lists, per model of a stack spec, the values of the spec that
// `vllm serve` must receive.
func EngineWants(spec *v1alpha1.ProductionStackSpec) []Engine {
	type item struct {
		path string
		m    v1alpha1.Model
		cfg  v1alpha1.EngineConfig
	}
	var items []item
	if spec.Model != nil {
		items = append(items, item{"spec.model", *spec.Model, spec.EngineConfig})
	}
	for i, m := range spec.Models {
		items = append(items, item{fmt.Sprintf("spec.models[%d]", i), m.Model, m.EngineConfig})
	}
	top := spec.VLLMConfig
	var out []Engine
	for _, it := range items {
		m, p := it.m, it.path
		var ws []Want
		add := func(field, option, v string) {
			if v != "" {
				ws = append(ws, Want{Field: field, Option: option, Values: []string{v}})
			}
		}
		if m.Path != "" {
			add(p+".path", "", m.Path)
			add(p+".servedModelName (or modelURL, or name)", "--served-model-name", or(m.ServedModelName, or(m.ModelURL, m.Name)))
		} else {
			add(p+".modelURL", "", m.ModelURL)
			add(p+".servedModelName", "--served-model-name", m.ServedModelName)
		}
		add(p+".revision", "--revision", m.Revision)
		add(p+".toolCallParser", "--tool-call-parser", m.ToolCallParser)
		add(p+".dtype", "--dtype", m.DType)
		add(p+".maxNumSeqs", "--max-num-seqs", itoa(m.MaxNumSeqs))
		add(p+".maxModelLen", "--max-model-len", itoa(m.MaxModelLen))
		if len(m.LoRAAdapters) > 0 {
			w := Want{Field: p + ".loraAdapters", Option: "--lora-modules", Decode: LoRAModule}
			for _, a := range m.LoRAAdapters {
				w.Values = append(w.Values, a.Name+"="+a.Path)
			}
			ws = append(ws, w)
		}
		vc := merged(top, it.cfg.VLLMConfig, spec.Model != nil)
		add(p+".vllmConfig.gpuMemoryUtilization", "--gpu-memory-utilization", vc.GPUMemoryUtilization)
		add(p+".vllmConfig.pipelineParallelSize", "--pipeline-parallel-size", itoa(vc.PipelineParallelSize))
		mn := it.cfg.MultiNode
		if mn == nil {
			mn = spec.MultiNode
		}
		if mn != nil {
			add(p+".multiNode.podsPerReplica", "--nnodes", itoa(&mn.PodsPerReplica))
		}
		d := it.cfg.Disaggregation
		if d == nil {
			d = spec.Disaggregation
		}
		if d == nil || (d.Enabled != nil && !*d.Enabled) {
			add(p+".vllmConfig.tensorParallelSize", "--tensor-parallel-size", itoa(vc.TensorParallelSize))
			out = append(out, Engine{Model: m.Name, Wants: ws, Extra: vc.ExtraArgs})
			continue
		}
		// A disaggregated model: an engine per group, labelled M-prefill and
		// M-decode, with the group's tensor parallelism and extraArgs after
		// the model's.
		for role, g := range map[string]*v1alpha1.DisaggregationGroup{"prefill": d.Prefill, "decode": d.Decode} {
			if g == nil {
				g = &v1alpha1.DisaggregationGroup{}
			}
			gws := slices.Clone(ws)
			field, tp := p+".vllmConfig.tensorParallelSize", vc.TensorParallelSize
			if g.TensorParallelSize != nil {
				field, tp = p+".disaggregation."+role+".tensorParallelSize", g.TensorParallelSize
			}
			if v := itoa(tp); v != "" {
				gws = append(gws, Want{Field: field, Option: "--tensor-parallel-size", Values: []string{v}})
			}
			out = append(out, Engine{Model: m.Name + "-" + role, Wants: gws, Extra: slices.Concat(vc.ExtraArgs, g.ExtraArgs)})
		}
	}
	return out
}

// merged is the vllmConfig an engine runs with: a models[] item's fields
// over the top level's (a list replaces).
func merged(top, own *v1alpha1.VLLMConfig, single bool) v1alpha1.VLLMConfig {
	var out v1alpha1.VLLMConfig
	if top != nil {
		out = *top
	}
	if single || own == nil {
		return out
	}
	if own.GPUMemoryUtilization != "" {
		out.GPUMemoryUtilization = own.GPUMemoryUtilization
	}
	if own.TensorParallelSize != nil {
		out.TensorParallelSize = own.TensorParallelSize
	}
	if own.ExtraArgs != nil {
		out.ExtraArgs = own.ExtraArgs
	}
	return out
}

// RouterWants lists the values of a stack spec that vllm-router must
// receive, and its extraArgs.
func RouterWants(spec *v1alpha1.ProductionStackSpec) ([]Want, []string) {
	rc := spec.RouterConfig
	if rc == nil {
		return nil, nil
	}
	const p = "spec.routerConfig"
	var ws []Want
	add := func(field, option, v string) {
		if v != "" {
			ws = append(ws, Want{Field: p + "." + field, Option: option, Values: []string{v}})
		}
	}
	if !disaggregated(spec) || (rc.RouterType != "" && rc.RouterType != "roundrobin") {
		// A disaggregated model's router runs disaggregated_prefill_orchestrated,
		// taking roundrobin (the XRD's default) for no choice.
		add("routerType", "--routing-logic", rc.RouterType)
	}
	add("k8sServiceDiscoveryType", "--k8s-service-discovery-type", rc.K8sServiceDiscoveryType)
	if rc.RouterType == "session" || rc.RouterType == "kvaware" {
		add("sessionKey", "--session-key", rc.SessionKey) // else not rendered
	}
	add("prefixMinMatchLength", "--prefix-min-match-length", itoa(rc.PrefixMinMatchLength))
	add("kvAwareThreshold", "--kv-aware-threshold", itoa(rc.KVAwareThreshold))
	add("lmcacheControllerPort", "--lmcache-controller-port", itoa(rc.LMCacheControllerPort))
	add("lmcacheControllerReplyPort", "--lmcache-controller-reply-port", itoa(rc.LMCacheControllerReplyPort))
	add("lmcacheControllerHeartbeatPort", "--lmcache-controller-heartbeat-port", itoa(rc.LMCacheControllerHeartbeatPort))
	return ws, rc.ExtraArgs
}

// disaggregated reports whether a model of the stack is.
func disaggregated(spec *v1alpha1.ProductionStackSpec) bool {
	on := func(d *v1alpha1.Disaggregation) bool { return d != nil && (d.Enabled == nil || *d.Enabled) }
	if on(spec.Disaggregation) {
		return true
	}
	for _, m := range spec.Models {
		if on(m.Disaggregation) {
			return true
		}
	}
	return false
}

func itoa(n *int32) string {
	if n == nil {
		return ""
	}
	return fmt.Sprint(*n)
}

// CheckObjects checks the command lines of a stack's composed objects (as
// maps): the vllm container of every engine Deployment, and the router's.
func CheckObjects(spec *v1alpha1.ProductionStackSpec, objects []map[string]any, vllm, router Table) []string {
	engines := EngineWants(spec)
	rw, rextra := RouterWants(spec)
	var problems []string
	for _, pods := range podTemplates(objects) {
		name, labels, containers := pods.name, pods.labels, pods.containers
		for _, c := range containers {
			c, _ := c.(map[string]any)
			args := strs(c["args"])
			switch {
			case c["name"] == "vllm":
				e, ok := engineOf(engines, labels["model"])
				if !ok {
					continue // a model whose name is no label value, among several
				}
				wants := e.Wants
				switch ray := RayRole(strs(c["command"])); ray {
				case "worker":
					continue // joins the leader's Ray head: no value of the stack
				case "leader":
					// sh -c '<script> leader … && exec "$0" "$@"' vllm serve …:
					// Ray takes the group's size from LWS, not --nnodes.
					if len(args) < 2 || args[1] != "serve" {
						problems = append(problems, fmt.Sprintf("%s container vllm: the Ray leader's arguments %q do not start with vllm serve", name, args))
						continue
					}
					args = args[2:]
					wants = slices.DeleteFunc(slices.Clone(wants), func(w Want) bool { return w.Option == "--nnodes" })
				}
				for _, p := range Check(vllm, args, e.Extra, wants, true) {
					problems = append(problems, fmt.Sprintf("%s container vllm: %s", name, p))
				}
				for _, p := range Overridden(wants, e.Extra, VLLMOption) {
					problems = append(problems, fmt.Sprintf("%s container vllm: %s", name, p))
				}
			case labels["app.kubernetes.io/component"] == "router":
				for _, p := range Check(router, args, rextra, rw, false) {
					problems = append(problems, fmt.Sprintf("%s container %s: %s", name, c["name"], p))
				}
			}
		}
	}
	return problems
}

// pods are the pod template of a Deployment, or one of a LeaderWorkerSet's
// (whose workers do not carry the label model: the LeaderWorkerSet does).
type pods struct {
	name       string
	labels     map[string]any
	containers []any
}

func podTemplates(objects []map[string]any) []pods {
	var out []pods
	for _, o := range objects {
		name, _ := at(o, "metadata", "name").(string)
		switch o["kind"] {
		case "Deployment":
			labels, _ := at(o, "spec", "template", "metadata", "labels").(map[string]any)
			containers, _ := at(o, "spec", "template", "spec", "containers").([]any)
			out = append(out, pods{"Deployment " + name, labels, containers})
		case "LeaderWorkerSet":
			labels, _ := at(o, "metadata", "labels").(map[string]any)
			for _, t := range []string{"leaderTemplate", "workerTemplate"} {
				containers, _ := at(o, "spec", "leaderWorkerTemplate", t, "spec", "containers").([]any)
				out = append(out, pods{"LeaderWorkerSet " + name + " " + t, labels, containers})
			}
		}
	}
	return out
}

// engineOf finds the engine whose pods carry label model: the model of
// that name, else the one model whose name is not a label value.
func engineOf(engines []Engine, label any) (Engine, bool) {
	for _, e := range engines {
		if e.Model == label {
			return e, true
		}
	}
	if len(engines) == 1 {
		return engines[0], true
	}
	return Engine{}, false
}

func at(m map[string]any, path ...string) any {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// RayRole says whether a command is a Ray multi-node group's "leader" (sh -c
// wrapping vllm serve) or "worker" (the script joining the leader), else "".
// The contract checker in stack reads the same form.
func RayRole(command []string) string {
	switch {
	case len(command) == 3 && command[0] == "sh" && command[1] == "-c" && strings.Contains(command[2], "multi-node-serving.sh leader"):
		return "leader"
	case len(command) >= 3 && command[0] == "bash" && strings.HasSuffix(command[1], "multi-node-serving.sh") && command[2] == "worker":
		return "worker"
	}
	return ""
}
