package resolve

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// engines merges the top-level engine blocks into each model and applies
// defaults. It does not validate; see validate.
func engines(spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input, n names.Names) []Engine {
	var out []Engine
	add := func(e Engine) {
		if Disaggregated(e.Cfg) {
			out = append(out, split(e, n)...)
			return
		}
		if !CanaryOn(e) {
			out = append(out, e)
			return
		}
		model := e
		if CanaryPromoting(e) {
			model = withCanary(e, in)
		}
		out = append(out, model, canaryEngine(e, in, n))
	}
	top := Layer{Path: "spec", Cfg: spec.EngineConfig}
	if spec.Model != nil {
		e := newEngine("spec.model", "spec", *spec.Model, ResolveConfig(spec.EngineConfig, in), in, n)
		e.Layers = []Layer{top}
		add(e)
		return out
	}
	for i, m := range spec.Models {
		cfg := ResolveConfig(MergeConfig(spec.EngineConfig, m.EngineConfig), in)
		p := fmt.Sprintf("spec.models[%d]", i)
		e := newEngine(p, p, m.Model, cfg, in, n)
		e.Layers = []Layer{top, {Path: p, Cfg: m.EngineConfig}}
		add(e)
	}
	return out
}

func newEngine(path, block string, m v1alpha1.Model, cfg v1alpha1.EngineConfig, in *v1beta1.Input, n names.Names) Engine {
	id := names.DNSLabel(m.Name)
	label := m.Name
	if !names.IsLabelValue(label) {
		label = names.Shorten(id, names.MaxLabelLength)
	}
	served := m.ServedModelName
	if served == "" {
		served = m.ModelURL
	}
	if served == "" {
		served = m.Name
	}
	ver, err := resolveVLLMVersion(cfg.VLLMConfig, in)
	return Engine{Path: path, Block: block, Model: m, Cfg: cfg, ID: id, Label: label, Served: served, VLLM: ver, VLLMErr: err,
		ModelID: id, ModelLabel: label,
		CacheVolume: n.ModelCacheVolume(), TemplatesVolume: n.ChatTemplatesVolume(id)}
}

// Identity is where a stack's objects live and what they are named after.
type Identity struct {
	Name      string // the user's name of the stack: the XR's, or the claim's
	Namespace string
	Legacy    bool // a v1 (LegacyCluster) XR, possibly from a claim
}

// New is the stack's names, and every model's engine with the
// spec's and the Input's defaults applied.
func New(id Identity, spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input) *Stack {
	name := names.Shorten(names.DNSLabel(id.Name), names.MaxLabelLength)
	n := names.Names{Stack: name}
	st := &Stack{
		Name:      name,
		Namespace: id.Namespace,
		Names:     n,
		Engines:   engines(spec, in, n),
		Router:    resolveRouter(spec.RouterConfig, in),

		NetworkPolicy:    spec.NetworkPolicy,
		AdapterSyncImage: in.GetAdapterSync().Image,
		Extension:        resolveExtension(spec.InferenceExtension),

		ID:   id,
		Spec: spec,
	}
	if _, _, ok := DisaggregatedLabels(st); ok && !RouterTypeChosen(spec.RouterConfig) {
		// The router's logic for a disaggregated model's transfer; another
		// routerType is refused (validateDisaggregation).
		for _, e := range st.Engines {
			if e.Role != "" {
				st.Router.RouterType = RoutingFor(transferOf(e))
				break
			}
		}
	}
	if st.Extension != nil {
		for i := range st.Engines {
			st.Engines[i].Picked = st.Engines[i].Role != ""
		}
	}
	if spec.Monitoring != nil {
		st.ServiceMonitor = spec.Monitoring.ServiceMonitor
	}
	if spec.LMCacheConfig != nil {
		st.CacheServer = spec.LMCacheConfig.Server
	}
	for i, e := range st.Engines {
		if e.Version == VersionCanary {
			// The model's engine is the one before its canary.
			st.Engines[i].Cfg.Replicas = ptr.To(canaryReplicas(e.Model.Canary, *st.Engines[i-1].Cfg.Replicas, st.Extension != nil))
		}
	}
	for i := range st.Engines {
		derive(st, &st.Engines[i])
	}
	return st
}
