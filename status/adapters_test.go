package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/internal/adaptersync"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestAdapterStatus: each runtime adapter is counted on the model's running
// pods by what the sync container wrote on each; the first pod (by name)
// where it is not loaded says why; terminating and pending pods do not
// count.
func TestAdapterStatus(t *testing.T) {
	if annotationAdapters != adaptersync.AnnotationStatus || adapterLoaded != adaptersync.Loaded {
		t.Fatalf("the status reads %q/%q, the sync program writes %q/%q", annotationAdapters, adapterLoaded, adaptersync.AnnotationStatus, adaptersync.Loaded)
	}
	pod := func(name string, phase corev1.PodPhase, annotation string, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
		if annotation != "" {
			p.Annotations = map[string]string{annotationAdapters: annotation}
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("p3", corev1.PodRunning, "", false),
		pod("p2", corev1.PodRunning, `{"sql":"loaded","chat":"download failed: 404 from the hub"}`, false),
		pod("p1", corev1.PodRunning, `{"sql":"loaded","chat":"loaded"}`, false),
		pod("p0", corev1.PodRunning, `{"sql":"base model mismatch"}`, true),
		pod("p4", corev1.PodPending, "", false),
	}
	got := adapterStatus([]string{"sql", "chat"}, func() []corev1.Pod { return pods })
	want := []v1alpha1.AdapterStatus{
		{Name: "sql", Loaded: 2, Pods: 3, Reason: "pod p3 has not reported it yet"},
		{Name: "chat", Loaded: 1, Pods: 3, Reason: "pod p2: download failed: 404 from the hub"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("adapters (-want +got):\n%s", diff)
	}
	if got := adapterStatus([]string{"sql"}, nil); got != nil {
		t.Errorf("without pods: %v, want nothing said", got)
	}
}
