package status

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/text"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// annotationAdapters is where the adapter sync container writes each
// adapter's state on its pod (internal/adaptersync.AnnotationStatus): a
// JSON object, adapter name → "loaded" or the reason it is not.
const (
	annotationAdapters = "vllm.ai/lora-adapters"
	adapterLoaded      = "loaded"
	maxAdapterReason   = 1 << 10
)

// adapterStatus is, for each runtime adapter of a model, on how many of its
// running pods it is loaded and, where it is not, the reason the first of
// them (by name) gives; nil when the pods were not sent.
func adapterStatus(names []string, pods Pods) []v1alpha1.AdapterStatus {
	if len(names) == 0 || pods == nil {
		return nil
	}
	var running []corev1.Pod
	for _, p := range pods() {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	slices.SortFunc(running, func(a, b corev1.Pod) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	reported := make([]map[string]string, len(running))
	for i, p := range running {
		_ = json.Unmarshal([]byte(p.Annotations[annotationAdapters]), &reported[i]) // a pod that says nothing reports nothing
	}
	out := make([]v1alpha1.AdapterStatus, 0, len(names))
	for _, n := range names {
		a := v1alpha1.AdapterStatus{Name: n, Pods: int32(len(running))}
		for i, r := range reported {
			switch state, ok := r[n]; {
			case state == adapterLoaded:
				a.Loaded++
			case a.Reason != "":
			case !ok:
				a.Reason = "pod " + clean(running[i].Name) + " has not reported it yet"
			default:
				a.Reason = "pod " + clean(running[i].Name) + ": " + text.Clip(clean(state), maxAdapterReason-80)
			}
		}
		out = append(out, a)
	}
	return out
}
