package resolve

import (
	"slices"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A canary (model.canary, issue 43) is a second version of a model served
// beside it under the same name: an engine of its own, M-canary, with the
// canary's settings over the model's, its own objects under its own keys
// (engine-M-canary, ...) and its own pod labels (app.kubernetes.io/name
// and model M-canary), so the model's InferencePool never selects its pods
// and a pool of its own does. Behind the router, which round-robins over
// the ready endpoints serving a name, both versions serve the model's name
// and the canary's share is its share of the engines (canaryReplicas).
// Promote: the model's engine takes the canary's settings (promoted) while
// the canary's objects stay as they are, until transition/canary.go sees
// the model's workload ready with them. Facts: testdata/upstream/
// MODEL-LIFE.md "Canary".

// VersionCanary is the Version of a model's canary engine and the value of
// its pods' LabelVersion.
const VersionCanary = "canary"

// CanaryID is the id of model id's canary: its objects' names and keys.
func CanaryID(modelID string) string { return names.GroupID(modelID, VersionCanary) }

// CanaryOn reports whether a model has a canary the stack renders: not for
// a disaggregated model (validateCanary refuses it).
func CanaryOn(e Engine) bool { return e.Model.Canary != nil && !Disaggregated(e.Cfg) }

// CanaryPromoting reports whether e is a model whose canary is being
// promoted: e then runs the canary's settings.
func CanaryPromoting(e Engine) bool { return CanaryOn(e) && e.Model.Canary.Promote }

// canaryBlocks are what a canary sets, as engine blocks: its image,
// engineVersion and extraArgs are vllmConfig's.
func canaryBlocks(c *v1alpha1.Canary) v1alpha1.EngineConfig {
	over := v1alpha1.EngineConfig{Resources: c.Resources, Env: c.Env}
	if c.Image != "" || c.EngineVersion != "" || c.ExtraArgs != nil {
		over.VLLMConfig = &v1alpha1.VLLMConfig{Image: c.Image, EngineVersion: c.EngineVersion, ExtraArgs: c.ExtraArgs}
	}
	return over
}

// withCanary is a model's engine with its canary's settings over its own,
// as the canary runs them: the revision, and the blocks merged as a
// models[] item's are over the top level. Replicas stay e's.
func withCanary(e Engine, in *v1beta1.Input) Engine {
	c := e.Model.Canary
	if c.Revision != "" {
		e.Model.Revision = c.Revision
	}
	e.Cfg = ResolveConfig(MergeConfig(e.Cfg, canaryBlocks(c)), in)
	e.Layers = append(slices.Clip(e.Layers), Layer{Path: e.Path + ".canary", Cfg: canaryBlocks(c), flat: []string{"vllmConfig"}, canary: true})
	e.VLLM, e.VLLMErr = resolveVLLMVersion(e.Cfg.VLLMConfig, in)
	return e
}

// canaryEngine is the engine of model e's canary: the canary's settings,
// its own id and label, fixed replicas (set by canaryReplicas) and no
// autoscaler.
func canaryEngine(e Engine, in *v1beta1.Input, n names.Names) Engine {
	g := withCanary(e, in)
	g.Version = VersionCanary
	g.ID = CanaryID(e.ID)
	g.Label = e.Label + "-" + VersionCanary
	if !names.IsLabelValue(g.Label) {
		g.Label = g.ID
	}
	g.ModelID, g.ModelLabel = g.ID, g.Label
	g.TemplatesVolume = n.ChatTemplatesVolume(g.ID)
	g.Cfg.Autoscaling = &v1alpha1.Autoscaling{Enabled: ptr.To(false)}
	g.Cfg.ScaleToZero = &v1alpha1.ScaleToZero{Enabled: ptr.To(false)}
	return g
}

// canaryReplicas are a canary's engines: canary.replicas (default 1)
// behind the inference extension, whose route's weights split the
// requests; behind the router the weight's share of the model's engines,
// CanaryRouterReplicas.
func canaryReplicas(c *v1alpha1.Canary, model int32, extension bool) int32 {
	if extension {
		return ptr.Deref(c.Replicas, 1)
	}
	return CanaryRouterReplicas(c.Weight, model)
}

// CanaryRouterReplicas are the canary engines beside model engines that
// give it weight percent of the router's endpoints:
// round(weight × model / (100 − weight)), at least 1 for a weight above 0;
// 0 at weight 0 (validateCanary refuses 100).
func CanaryRouterReplicas(weight, model int32) int32 {
	if weight <= 0 {
		return 0
	}
	if weight >= 100 {
		return model
	}
	w, m := int64(weight), int64(model)
	r := (2*w*m + (100 - w)) / (2 * (100 - w))
	return int32(max(1, min(r, 1024))) //nolint:gosec // bounded
}

// CanaryShare is the percent of a model's requests its canary gets: the
// weight behind the inference extension; behind the router its share of
// the engines, rounded down.
func CanaryShare(c *v1alpha1.Canary, model, canary int32, extension bool) int32 {
	if extension {
		return c.Weight
	}
	if model+canary == 0 {
		return 0
	}
	return int32(int64(canary) * 100 / int64(model+canary)) //nolint:gosec // at most 100
}
