package status

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzPodIssues: whatever pods a cluster sends, their issues come out the
// same twice, in at most maxPodIssues lines and a line for the rest, each
// within its bound, with a reason from the severity list.
func FuzzPodIssues(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"p"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","message":"0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}`), 3)
	f.Add([]byte(`{"metadata":{"name":"q"},"status":{"phase":"Running","containerStatuses":[{"name":"vllm","state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"reason":"OOMKilled","exitCode":137}}}]}}`), 1)
	f.Add([]byte(`{"metadata":{"name":"r","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Failed","reason":"Evicted"}}`), 9)
	f.Add([]byte(`{"status":{"phase":"Running","containerStatuses":[{"name":"`+strings.Repeat("x", 600)+`","state":{"terminated":{"exitCode":1}}}]}}`), 5)
	f.Fuzz(func(t *testing.T, pod []byte, copies int) {
		var m map[string]any
		if json.Unmarshal(pod, &m) != nil {
			return
		}
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p) != nil {
			return
		}
		copies = 1 + max(0, copies)%12
		pods := func() []corev1.Pod {
			ps := make([]corev1.Pod, 0, copies)
			for i := range copies {
				q := *p.DeepCopy()
				q.Name += strings.Repeat("-", i%3) // some share a name
				ps = append(ps, q)
			}
			return ps
		}
		r1, l1 := podIssues(explaining(pods))
		r2, l2 := podIssues(explaining(pods))
		if r1 != r2 || strings.Join(l1, "\n") != strings.Join(l2, "\n") {
			t.Fatalf("two readings of the same pods differ")
		}
		if len(l1) > maxPodIssues+1 {
			t.Errorf("%d pod issue lines", len(l1))
		}
		if len(l1) > 0 && worst(r1) != r1 {
			t.Errorf("reason %q is not one of the condition reasons", r1)
		}
		for _, l := range l1 {
			if len(l) > len("pods  and 99 more: ")+maxPodsNamed*(maxPodNameLength*4+2)+maxDetailLength*4 {
				t.Errorf("a pod issue line of %d bytes", len(l))
			}
		}
	})
}
