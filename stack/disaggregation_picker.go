package stack

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A disaggregated model behind llm-d's endpoint picker (issue 30): one
// InferencePool over both groups' pods, which carry the picker's role label
// (llm-d.ai/role: prefill or decode); the picker's configuration has a
// prefill and a decode profile and the profile handler that runs both for
// every request (inferencepool.ConfigPD); on each decode pod llm-d's
// routing sidecar listens on the engine port, which the pool targets, and
// vLLM behind it on inferencepool.DecodeEnginePort. The sidecar sends the
// request to the prefill endpoint the picker named, then to its vLLM with
// the prefill engine's kv_transfer_params, and the decode engine pulls the
// KV cache over NIXL from the prefill pod's side channel, as behind the
// router (facts: testdata/upstream/GAIE.md "P/D behind llm-d's picker",
// pd-sidecar-flags.tsv, epp-plugins.tsv, epp-plugin-parameters.tsv).

// sidecar is spec.inferenceExtension.routingSidecar with defaults applied.
type sidecar struct {
	image      string
	pullPolicy corev1.PullPolicy
	release    upstream.Version
	from       string // where the release comes from, for messages
	err        error
}

// resolveSidecar: the image llm-d published with the picker's release
// unless the stack names one; the release its tag names, else the
// picker's.
func resolveSidecar(x *v1alpha1.InferenceExtension, picker upstream.PickerRelease) sidecar {
	sc := x.RoutingSidecar
	if sc == nil {
		sc = &v1alpha1.RoutingSidecar{}
	}
	v := picker.Version
	if picker.Kind != upstream.PickerLLMD {
		v = upstream.DefaultPicker.Version
	}
	out := sidecar{image: or(sc.Image, upstream.SidecarImageOf(v)), pullPolicy: corev1.PullPolicy(sc.ImagePullPolicy)}
	repo, tag := upstream.ImageTag(out.image)
	if !upstream.IsSidecarImage(repo) {
		out.err = fmt.Errorf("routingSidecar.image %s is not llm-d's routing sidecar (%s, or %s before v0.9.0): the function spells the sidecar's flags by release, so it must know which program runs; use one of them, or your mirror of one under the same repository name", out.image, upstream.LLMDSidecarImage, upstream.LLMDSidecarImageOld)
		return out
	}
	if t, ok := upstream.ParseVersion(tag); ok {
		out.release, out.from = t, "routingSidecar.image "+out.image
	} else {
		out.release, out.from = picker.Version, fmt.Sprintf("the picker's release, routingSidecar.image %s naming none", out.image)
	}
	if out.release.Less(upstream.PickerPDSince) {
		out.err = fmt.Errorf("routingSidecar.image %s runs the sidecar of llm-d %s (%s), older than %s, the first whose flags the function renders (--kv-connector): use %s or later", out.image, out.release, out.from, upstream.PickerPDSince, upstream.PickerPDSince)
	}
	return out
}

// routingSidecarOn reports whether an engine's pods run the routing
// sidecar: a decode group's behind the picker.
func routingSidecarOn(e engine) bool { return e.picked && e.role == roleDecode }

// vllmPort is where an engine's vLLM listens: behind the routing sidecar,
// DecodeEnginePort; else the engine port.
func vllmPort(e engine) int32 {
	if routingSidecarOn(e) {
		return inferencepool.DecodeEnginePort
	}
	return enginePort
}

// routingSidecar is the sidecar container of a decode pod: on the engine
// port, which the pool and the engine Service target, in front of vLLM.
func routingSidecar(s *resolvedStack) corev1.Container {
	sc := s.extension.sidecar
	return inferencepool.SidecarContainer(inferencepool.Sidecar{
		Image: sc.image, PullPolicy: sc.pullPolicy, Release: sc.release,
		Port: enginePort, EnginePort: inferencepool.DecodeEnginePort,
	})
}

// enginePodLabels are an engine's pod labels: its objects', and behind the
// picker the group's role, which the picker's prefill and decode filters
// read.
func enginePodLabels(stack string, e engine) map[string]string {
	l := engineLabels(stack, e)
	if e.picked {
		role := upstream.PickerRolePrefill
		if e.role == roleDecode {
			role = upstream.PickerRoleDecode
		}
		l[upstream.PickerRoleLabel] = role
	}
	return l
}

// poolModel is the engine that stands for e's model in the routing layer,
// and whether e is the one that does: a disaggregated model's prefill
// group, with the model's id and label (its decode group does not); any
// other engine itself.
func poolModel(e engine) (engine, bool) {
	switch e.role {
	case roleDecode:
		return e, false
	case rolePrefill:
		e.id, e.label = e.modelID, e.modelLabel
	}
	return e, true
}

// poolModels are the engines that stand for the stack's models.
func poolModels(s *resolvedStack) []engine {
	out := make([]engine, 0, len(s.engines))
	for _, e := range s.engines {
		if m, ok := poolModel(e); ok {
			out = append(out, m)
		}
	}
	return out
}

// poolSelector is the pool's selector: a model's serving pods; a
// disaggregated model's, both groups': the stack's serving pods, since a
// stack with a disaggregated model serves that model alone
// (validateDisaggregation) and a multi-node group's workers are another
// component.
func poolSelector(s *resolvedStack, e engine) map[string]string {
	if e.role == "" {
		return engineSelector(s.name, e)
	}
	return map[string]string{LabelInstance: s.name, LabelComponent: ComponentEngine}
}

// validatePickerPD refuses a disaggregated model the picker or its sidecar
// cannot serve, naming the release or setting in the way; e is the
// model's prefill group.
func validatePickerPD(f *Findings, s *resolvedStack, e engine) {
	x := s.extension
	const p = "spec.inferenceExtension"
	if x.releaseErr == nil && !upstream.PickerPD(x.release) {
		why := "the inference extension's own picker has no prefill and decode plugins (epp-plugins.tsv)"
		if x.release.Kind == upstream.PickerLLMD {
			why = fmt.Sprintf("%s has only the pd-profile-handler and its sidecar the --connector flag, whose configuration the function does not render", x.release)
		}
		f.errorf("%s: %s.disaggregation needs the picker to schedule prefill and decode itself, and the picker is %s (%s): %s; use llm-d's picker %s or later (%s), or route the model through the production-stack router (remove inferenceExtension)",
			p, e.block, x.release, x.from, why, upstream.PickerPDSince, upstream.LLMDPickerImage)
		return
	}
	if t := transferOf(e); t == transferLMCache {
		f.errorf("%s.disaggregation.transfer lmcache cannot go behind the endpoint picker: llm-d's routing sidecar moves the KV cache by nixlv2, shared-storage, sglang, mooncake or offloading, none of them LMCache's push from the prefill engine to the decode group's receiver; use transfer nixl, or route the model through the production-stack router (remove inferenceExtension)", e.block)
	}
	if _, ok := multiNode(e); ok {
		f.errorf("%s: a multi-node disaggregated model behind the endpoint picker needs the routing sidecar on its decode leaders, which the stack does not render yet: serve each group on one node, or route the model through the production-stack router (remove inferenceExtension)", e.block)
	}
	sc := x.sidecar
	switch newest := upstream.PickerNewest[upstream.PickerLLMD]; {
	case sc.err != nil:
		f.errorf("%s.%s", p, sc.err)
	case newest.Less(sc.release):
		f.warnf("%s.routingSidecar: the sidecar of llm-d %s (%s) is newer than %s, the newest release this function knows: its flags are rendered as for %s", p, sc.release, sc.from, newest, newest)
	}
}
