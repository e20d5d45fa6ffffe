package resolve

import (
	"slices"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A disaggregated model is served by two groups of ordinary engines, the
// production-stack chart's recipe: a prefill group that computes each
// prompt's KV cache and a decode group that pulls it and generates. The
// router's disaggregated_prefill_orchestrated logic (router 0.1.11) sends a
// request to a prefill engine with max_tokens 1, then to a decode engine
// with the kv_transfer_params the prefill engine returned, its remote_host
// replaced by the prefill endpoint's host; the decode engine then dials the
// prefill pod's NIXL side channel directly (facts:
// testdata/upstream/disagg.tsv, DISAGG-MULTINODE.md §1).
const (
	RolePrefill = "prefill"
)

const (
	RoleDecode = "decode"
)

const (
	TransferNIXL = "nixl"
)

const (
	TransferLMCache = "lmcache"
)

const (
	// The router's logic for each transfer: orchestrated passes vLLM's
	// kv_transfer_params from the prefill engine to the decode engine;
	// disaggregated_prefill sends the request to one engine of each group
	// and leaves the transfer to LMCache.
	RoutingDisaggregated = "disaggregated_prefill_orchestrated"
)

const (
	RoutingDisaggregatedLMCache = "disaggregated_prefill"
)

// RoleGroups are the groups of a disaggregated model, in the order their
// engines are built.
var RoleGroups = []string{RolePrefill, RoleDecode}

// Disaggregated reports whether a merged engine configuration asks for
// disaggregation.
func Disaggregated(c v1alpha1.EngineConfig) bool {
	d := c.Disaggregation
	return d != nil && (d.Enabled == nil || *d.Enabled)
}

// GroupOf is the group block of a role.
func GroupOf(d *v1alpha1.Disaggregation, role string) *v1alpha1.DisaggregationGroup {
	g := d.Prefill
	if role == RoleDecode {
		g = d.Decode
	}
	if g == nil {
		return &v1alpha1.DisaggregationGroup{}
	}
	return g
}

// transferOf is how a disaggregated engine's KV cache moves.
func transferOf(e Engine) string {
	if t := e.Cfg.Disaggregation.Transfer; t != "" {
		return t
	}
	return TransferNIXL
}

// RoutingFor is the router's logic for a transfer.
func RoutingFor(transfer string) string {
	if transfer == TransferLMCache {
		return RoutingDisaggregatedLMCache
	}
	return RoutingDisaggregated
}

// IsDisaggregatedRouting reports whether the router's logic is one the
// stack sets for a disaggregated model (never chosen by routerType).
func IsDisaggregatedRouting(routerType string) bool {
	return routerType == RoutingDisaggregated || routerType == RoutingDisaggregatedLMCache
}

// split makes the engines of a disaggregated model: one per group, named
// and labelled M-prefill and M-decode (the router tells the groups apart by
// the pod label "model"), serving the model under the same name, each with
// the group's settings over the model's.
func split(e Engine, n names.Names) []Engine {
	out := make([]Engine, 0, len(RoleGroups))
	for _, role := range RoleGroups {
		g := e
		g.Role = role
		g.ID = names.Shorten(e.ID+"-"+role, names.MaxLabelLength)
		g.Label = e.Label + "-" + role
		if !names.IsLabelValue(g.Label) {
			g.Label = g.ID
		}
		g.TemplatesVolume = n.ChatTemplatesVolume(g.ID)
		g.Cfg = groupConfig(e.Cfg, GroupOf(e.Cfg.Disaggregation, role))
		g.Layers = append(slices.Clip(e.Layers), groupLayers(e.Layers, role)...)
		out = append(out, g)
	}
	return out
}

// groupConfig is a model's merged engine configuration with a group's
// settings over it, merged as a models[] item's are over the top level
// (MergeConfig); the group's extraArgs come after the model's. Nothing of c
// is changed.
func groupConfig(c v1alpha1.EngineConfig, g *v1alpha1.DisaggregationGroup) v1alpha1.EngineConfig {
	over := groupBlocks(g)
	over.VLLMConfig.ExtraArgs = nil
	out := MergeConfig(c, over)
	out.VLLMConfig.ExtraArgs = slices.Concat(c.VLLMConfig.ExtraArgs, g.ExtraArgs)
	return out
}

// groupBlocks is what a group sets, as engine blocks.
func groupBlocks(g *v1alpha1.DisaggregationGroup) v1alpha1.EngineConfig {
	over := v1alpha1.EngineConfig{Replicas: g.Replicas, Resources: g.Resources, Autoscaling: g.Autoscaling,
		VLLMConfig: &v1alpha1.VLLMConfig{TensorParallelSize: g.TensorParallelSize, ExtraArgs: g.ExtraArgs}}
	if g.NodeSelector != nil || g.Tolerations != nil {
		over.Scheduling = &v1alpha1.Scheduling{NodeSelector: g.NodeSelector, Tolerations: g.Tolerations}
	}
	return over
}

// groupLayers are the group blocks of a role in a model's layers: the
// group as written in each block that sets it.
func groupLayers(model []Layer, role string) []Layer {
	var out []Layer
	for _, l := range model {
		d := l.Cfg.Disaggregation
		if d == nil {
			continue
		}
		g := d.Prefill
		if role == RoleDecode {
			g = d.Decode
		}
		if g != nil {
			out = append(out, Layer{Path: l.Path + ".disaggregation." + role, Cfg: groupBlocks(g), flat: []string{"vllmConfig", "scheduling"}})
		}
	}
	return out
}

// RouterTypeChosen reports whether the stack chose a routing logic: one
// other than the default, roundrobin, which the API server writes into every
// stack that sets none (the XRD's default).
func RouterTypeChosen(rc *v1alpha1.RouterConfig) bool {
	return rc != nil && rc.RouterType != "" && rc.RouterType != DefaultRouterType
}

// DisaggregatedLabels are the values of the pod label "model" of the
// stack's prefill and decode engines, for the router's flags.
func DisaggregatedLabels(s *Stack) (prefill, decode string, ok bool) {
	for _, e := range s.Engines {
		switch e.Role {
		case RolePrefill:
			prefill = e.Label
		case RoleDecode:
			decode = e.Label
		}
	}
	return prefill, decode, prefill != "" && decode != ""
}
