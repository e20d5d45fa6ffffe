package build

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// poolSelector is the pool's selector: a model's serving pods; a
// disaggregated model's, both groups': the stack's serving pods, since a
// stack with a disaggregated model serves that model alone
// (validateDisaggregation) and a multi-node group's workers are another
// component.
func poolSelector(s *resolve.Stack, e resolve.Engine) map[string]string {
	if e.Role == "" {
		return engineSelector(s.Name, e)
	}
	return map[string]string{names.LabelInstance: s.Name, names.LabelComponent: names.ComponentEngine}
}

// AnnotationObjectives, on a picker's pods, is the apiVersion of its
// model's InferenceObjectives; absent when the model has none.
const AnnotationObjectives = "serving.vllm.ai/inference-objectives"

// Pool is the InferencePool and picker of one model; e stands for the
// model (PoolModel).
func Pool(s *resolve.Stack, e resolve.Engine) inferencepool.Pool {
	x := s.Extension
	p := x.Spec.Picker
	if p == nil {
		p = &v1alpha1.EndpointPicker{}
	}
	name := s.Names.Picker(e.ID)
	l := names.Labels(s.Name, names.Shorten(e.ID, names.MaxLabelLength), names.ComponentPicker)
	l[names.LabelModel] = e.Label
	pk := inferencepool.Picker{
		Name:          name,
		Image:         x.Image,
		PullPolicy:    corev1.PullPolicy(p.ImagePullPolicy),
		Release:       x.Release,
		Replicas:      x.Replicas,
		Resources:     inferencepool.DefaultResources(),
		PodLabels:     names.Selector(s.Name, names.Shorten(e.ID, names.MaxLabelLength), names.ComponentPicker),
		Weights:       x.Weights,
		KVCacheMetric: pickerKVCacheMetric(x.Release, e),
		// A model at zero: the picker holds its requests.
		RequestTTLSeconds: PickerRequestTTL(e),
		FlowControl:       ScalesOnPoolSaturation(e),
		Disaggregated:     e.Role != "",
	}
	if p.Resources != nil {
		pk.Resources = *p.Resources
	}
	pk.Precise = precisePicker(s, e)
	if len(e.Model.InferenceObjectives) > 0 {
		// The picker decides at start, from API discovery, whether to
		// watch InferenceObjectives (GAIE.md §h): one started before
		// their CRD was installed never reads them. The annotation
		// restarts it when a model gains its first objective (the stack
		// is refused while the CRD is missing) or changes group.
		pk.PodAnnotations = map[string]string{AnnotationObjectives: upstream.PickerObjectiveOf(x.Release).APIVersion}
	}
	if sc := p.Scheduling; sc != nil {
		pk.NodeSelector, pk.Tolerations, pk.Affinity = sc.NodeSelector, sc.Tolerations, sc.Affinity
	}
	return inferencepool.Pool{
		Name: s.Names.InferencePool(e.ID), Namespace: s.Namespace, Labels: l,
		Selector:    poolSelector(s, e),
		TargetPort:  names.EnginePort,
		FailureMode: x.Spec.FailureMode,
		Picker:      pk,
	}
}

// pickerKVCacheMetric is the engines' KV-cache metric for the picker's
// flag when the picker's default is a name the engines' vLLM does not
// export; "" when it is.
func pickerKVCacheMetric(r upstream.PickerRelease, e resolve.Engine) string {
	def := upstream.PickerKVCacheMetric(r)
	names := upstream.VLLMKVCacheMetrics(e.VLLM.Version)
	if len(names) == 0 || slices.Contains(names, def) {
		return ""
	}
	return names[len(names)-1]
}

// poolObjects are the objects of one model's pool, under keys of the
// model's; e stands for the model (PoolModel). The RoleBinding waits for
// its Role, as the router's does.
func poolObjects(s *resolve.Stack, e resolve.Engine, o Observed) []Object {
	p := Pool(s, e)
	objs := []Object{
		{names.EngineKey(e.ID) + "-inferencepool", inferencepool.InferencePool(p)},
		{names.PickerKey(e.ID), inferencepool.Deployment(p)},
		{names.PickerKey(e.ID) + "-service", inferencepool.Service(p)},
		{names.PickerKey(e.ID) + "-serviceaccount", inferencepool.ServiceAccount(p)},
		{names.PickerKey(e.ID) + "-config", inferencepool.ConfigMap(p)},
		{names.PickerKey(e.ID) + "-role", inferencepool.Role(p)},
	}
	if o.Has(names.PickerKey(e.ID) + "-role") {
		objs = append(objs, Object{names.PickerKey(e.ID) + "-rolebinding", inferencepool.RoleBinding(p)})
	}
	for _, o := range Objectives(s, e) {
		objs = append(objs, Object{names.ObjectiveKey(e.ID, o.Spec.Name, o.APIVersion), inferencepool.InferenceObjective(o.Objective)})
	}
	return objs
}

// An objective is one of a model's inferenceObjectives as its pool's
// picker reads it.
type objective struct {
	inferencepool.Objective
	Spec v1alpha1.InferenceObjective
	// Header is the request header, name and value, that selects it.
	Header string
}

// Objectives are a model's inferenceObjectives, in the group the picker's
// release watches; none without the inference extension. A disaggregated
// model's are its prefill group's (its decode group has none: one pool).
func Objectives(s *resolve.Stack, e resolve.Engine) []objective {
	if !resolve.ExtensionOn(s) || e.Role == resolve.RoleDecode || e.Version != "" {
		return nil // a canary's pool has none (validateCanary)
	}
	po := upstream.PickerObjectiveOf(s.Extension.Release)
	l := names.Labels(s.Name, names.Shorten(e.ModelID, names.MaxLabelLength), names.ComponentPicker)
	l[names.LabelModel] = e.ModelLabel
	out := make([]objective, 0, len(e.Model.InferenceObjectives))
	for _, o := range e.Model.InferenceObjectives {
		name := s.Names.InferenceObjective(e.ModelID, o.Name)
		out = append(out, objective{
			Objective: inferencepool.Objective{
				Name: name, Namespace: s.Namespace, Labels: l,
				APIVersion: po.APIVersion, Pool: s.Names.InferencePool(e.ModelID), Priority: int32(o.Priority), //nolint:gosec // the XRD's bounds, checked
			},
			Spec:   o,
			Header: po.Header + ": " + name,
		})
	}
	return out
}

// PickerRequestTTL is the request TTL of the model's picker: the cold-start
// time when the model scales to zero, else 0 (flow control off).
func PickerRequestTTL(e resolve.Engine) int64 {
	if e.ScaleToZero == nil {
		return 0
	}
	return ColdStartSeconds(e)
}
