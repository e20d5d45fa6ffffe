package build

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

func cacheServerLabels(s *resolve.Stack) map[string]string {
	return names.Labels(s.Name, names.ComponentCacheServer, names.ComponentCacheServer)
}

// enginePodLabels are an engine's pod labels: its objects', and behind the
// picker the group's role, which the picker's prefill and decode filters
// read.
func enginePodLabels(stack string, e resolve.Engine) map[string]string {
	l := EngineLabels(stack, e)
	if e.Picked {
		role := upstream.PickerRolePrefill
		if e.Role == resolve.RoleDecode {
			role = upstream.PickerRoleDecode
		}
		l[upstream.PickerRoleLabel] = role
	}
	return l
}

// enginePodsSelector selects the stack's engine pods, and with a multi-node
// model its workers too.
func enginePodsSelector(s *resolve.Stack) metav1.LabelSelector {
	if !resolve.MultiNodeOn(s) {
		return metav1.LabelSelector{MatchLabels: map[string]string{names.LabelInstance: s.Name, names.LabelComponent: names.ComponentEngine}}
	}
	return metav1.LabelSelector{
		MatchLabels: map[string]string{names.LabelInstance: s.Name},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: names.LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: []string{names.ComponentEngine, names.ComponentEngineWorker},
		}},
	}
}

// EngineLabels are the labels of a model's objects; its pods carry them too.
func EngineLabels(stack string, e resolve.Engine) map[string]string {
	l := names.Labels(stack, names.Shorten(e.ID, names.MaxLabelLength), names.ComponentEngine)
	l[names.LabelModel] = e.Label
	if e.Version != "" {
		l[names.LabelVersion] = e.Version
	}
	return l
}

func engineSelector(stack string, e resolve.Engine) map[string]string {
	return names.Selector(stack, names.Shorten(e.ID, names.MaxLabelLength), names.ComponentEngine)
}

// engineDiscoverySelector is the label selector the router uses to find the
// stack's engine pods. It names the stack, so two stacks in one namespace
// never route to each other's engines (the Helm chart's default selector is
// shared by every release in a namespace).
func engineDiscoverySelector(stack string) string {
	return names.LabelInstance + "=" + stack + "," + names.LabelComponent + "=" + names.ComponentEngine
}

// engineWorkerLabels are the labels of a multi-node model's worker pods:
// the engine's, with the worker component and without the router's model
// label.
func engineWorkerLabels(stack string, e resolve.Engine) map[string]string {
	l := EngineLabels(stack, e)
	l[names.LabelComponent] = names.ComponentEngineWorker
	delete(l, names.LabelModel)
	return l
}

func routerLabels(s *resolve.Stack) map[string]string {
	return names.Labels(s.Name, names.ComponentRouter, names.ComponentRouter)
}
