package validate

import "github.com/vllm-project/function-vllm-stack/stack/resolve"

// validateCanary checks each model's canary (model.canary): what it can
// be combined with, and behind the router what its weight becomes, the
// canary's share of the model's engines (resolve/canary.go).
func validateCanary(f *Findings, s *resolve.Stack) {
	ext := resolve.ExtensionOn(s)
	for i, e := range s.Engines {
		c := e.Model.Canary
		if c == nil || e.Version != "" || e.Role == resolve.RoleDecode {
			continue
		}
		at := e.Path + ".canary"
		switch {
		case resolve.Disaggregated(e.Cfg):
			f.errorf("%s: a disaggregated model cannot have a canary yet: its prefill and decode groups of two versions must never pair (their KV layouts may differ), and the router pairs every prefill engine with every decode engine by the model label it is given, while behind the picker the model's pool selects every engine pod of the stack; remove canary, or roll the new version out by changing the model", at)
			continue
		case e.ScaleToZero != nil:
			f.errorf("%s: a model that scales to zero (%s) cannot have a canary: at zero the model has no engine beside the canary, and KEDA wakes only the model; turn scaleToZero off while the canary runs", at, e.Origin("scaleToZero"))
			continue
		}
		if c.Revision == "" && c.Image == "" && c.EngineVersion == "" && c.ExtraArgs == nil && c.Resources == nil && len(c.Env) == 0 {
			f.errorf("%s changes nothing of the model: set the canary's revision, image, engineVersion, extraArgs, resources or env", at)
		}
		if c.Promote && e.Cfg.DeploymentStrategy == "Recreate" {
			f.warnf("%s.promote: the model's deploymentStrategy is Recreate (%s), so its engines all stop before those with the canary's settings start; meanwhile only the canary serves, and behind the inference extension the route still sends the model's pool %d%% of the requests, which fail; use RollingUpdate for the promotion", at, e.Origin("deploymentStrategy"), 100-c.Weight)
		}
		if ext {
			if len(e.Model.InferenceObjectives) > 0 {
				f.warnf("%s: the canary's pool has no InferenceObjectives (an objective's name is what clients send, and it names one object of the model's pool): requests the route sends to the canary get priority 0", at)
			}
			continue
		}
		validateCanaryRouter(f, e, s.Engines[i+1], at)
	}
}

// validateCanaryRouter checks a canary behind the production-stack
// router, which has no weights: it round-robins over the ready endpoints
// that serve the model's name (MODEL-LIFE.md "Canary"), so the weight sets
// the canary's replicas and the share is what they make of the engines.
func validateCanaryRouter(f *Findings, model, canary resolve.Engine, at string) {
	c := model.Model.Canary
	switch {
	case c.Replicas != nil:
		f.errorf("%s.replicas: behind the production-stack router the canary's share is its share of the model's engines, so the weight sets its replicas; remove replicas and set weight", at)
	case c.Weight == 100:
		f.errorf("%s.weight 100: the production-stack router sends a model's requests to every ready engine that serves it, so the model's own engines keep a share while they run; promote the canary instead (%s.promote: true), or route through the inference extension", at, at)
	case model.Autoscaled:
		f.errorf("%s: behind the production-stack router the canary's share is its share of the model's engines, and the model's autoscaler (%s) changes their number with the load; turn autoscaling off while the canary runs, or route through the inference extension, whose route weights hold whatever the replicas", at, model.Origin("autoscaling"))
	default:
		m, r := *model.Cfg.Replicas, *canary.Cfg.Replicas
		if share := resolve.CanaryShare(c, m, r, false); c.Weight > 0 && share != c.Weight {
			f.warnf("%s.weight %d: behind the production-stack router the canary's share is its share of the model's ready engines: %d canary beside %d makes %d of %d = %d%%, not %d%%: set a weight the replicas give exactly (%d), or change the model's replicas", at, c.Weight, r, m, r, m+r, share, c.Weight, exactWeight(m, r))
		}
	}
}

// exactWeight is the weight whose share r canary engines beside m model
// engines give exactly, rounded down.
func exactWeight(m, r int32) int32 { return r * 100 / (m + r) }
