package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestPrefetchJob (issue 43): a prefetching stack's fill Job through the
// API server and kube-controller-manager's Job controller. The first
// reconcile composes the claim and the Job, no engine; the Job controller
// creates the fill pod; no kubelet runs, so the test ends the pod as the
// kubelet would: exit code 11 (the fill program's for a gated model) fails
// the Job at once by its podFailurePolicy, and the function's status names
// the cause from the Job's condition as the controller words it; a pod
// that succeeds completes the Job, and the next reconcile composes the
// engines.
func TestPrefetchJob(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "prefetch")
	admin, _ := client(t, cp.Config())
	input := compositionInput(t, "../composition/composition.yaml")
	for _, tc := range []struct {
		revision  string
		exitCode  int32
		wantCache map[string]any
		engines   bool
	}{
		{"gated", 11, map[string]any{"state": "Failed", "reason": "the model is gated: its terms are not accepted for the token of vllmConfig.hfTokenSecret (or there is none); once that is fixed, delete Job <job> to try again"}, false},
		{"main", 0, map[string]any{"state": "Cached"}, true},
	} {
		t.Run(tc.revision, func(t *testing.T) {
			m := readYAML(t, "../example/xr.yaml")
			setSpecJSON("storage", `{"accessModes": ["ReadWriteMany"], "prefetch": {}}`)(m)
			setSpec("model.revision", tc.revision)(m)
			m["metadata"].(map[string]any)["name"] = "prefetch-" + tc.revision
			xr := &unstructured.Unstructured{Object: m}
			xr.SetNamespace(ns)
			got, err := admin.Resource(xrGVR).Namespace(ns).Create(ctx, xr, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
			if err != nil {
				t.Fatal(err)
			}
			rsp := render(t, got.Object, input, nil)
			observed := map[string]*unstructured.Unstructured{}
			var jobKey string
			for _, k := range desiredKeys(rsp) {
				if strings.Contains(k, "-fill-") {
					jobKey = k
				}
				if engineDeployment(rsp, k) {
					t.Errorf("the first reconcile composes the engine %s before its cache is filled", k)
				}
				o, err := apply(ctx, t, admin, composed(got, k, rsp.GetDesired().GetResources()[k]), composedFieldOwner(got), false)
				if err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				observed[k] = o
			}
			if jobKey == "" {
				t.Fatalf("no fill Job in %v", desiredKeys(rsp))
			}
			job := observed[jobKey]

			// The Job controller creates the fill pod; the test ends it.
			var pod *corev1.Pod
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.GetName()})
				if err != nil || len(pods.Items) == 0 {
					return false, nil
				}
				pod = &pods.Items[0]
				return true, nil
			})
			if err != nil {
				t.Fatalf("the Job controller created no pod for %s: %v", job.GetName(), err)
			}
			if c := pod.Spec.Containers[0]; c.Name != "fill" || c.Command[0] != "python3" || c.Command[len(c.Command)-1] != tc.revision {
				t.Errorf("fill pod container %s %q", c.Name, c.Command)
			}
			phase := corev1.PodFailed
			if tc.exitCode == 0 {
				phase = corev1.PodSucceeded
			}
			pod.Status.Phase = phase
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "fill", Image: pod.Spec.Containers[0].Image, ImageID: "x",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tc.exitCode, Reason: "Completed"}}}}
			if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			want := batchv1.JobComplete
			if tc.exitCode != 0 {
				want = batchv1.JobFailed
			}
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				j, err := admin.Resource(jobsGVR).Namespace(ns).Get(ctx, job.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				conds, _, _ := unstructured.NestedSlice(j.Object, "status", "conditions")
				for _, c := range conds {
					if c, ok := c.(map[string]any); ok && c["type"] == string(want) && c["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("Job %s has no condition %s: %v", job.GetName(), want, err)
			}
			observed[jobKey], err = admin.Resource(jobsGVR).Namespace(ns).Get(ctx, job.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			next := render(t, got.Object, input, observed)
			status, _ := next.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			models, _ := status["models"].([]any)
			if len(models) == 0 {
				t.Fatalf("no status.models: %v", status)
			}
			wantCache := map[string]any{}
			for k, v := range tc.wantCache {
				wantCache[k] = strings.ReplaceAll(v.(string), "<job>", job.GetName())
			}
			if cache := models[0].(map[string]any)["modelCache"]; !equalJSON(cache, wantCache) {
				t.Errorf("status.models[0].modelCache %v, want %v", cache, wantCache)
			}
			engines := false
			for _, k := range desiredKeys(next) {
				engines = engines || engineDeployment(next, k)
			}
			if engines != tc.engines {
				t.Errorf("engines composed: %v, want %v (%v)", engines, tc.engines, desiredKeys(next))
			}
		})
	}
}

var jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// engineDeployment: key is an engine Deployment of the response.
func engineDeployment(rsp *fnv1.RunFunctionResponse, key string) bool {
	o := rsp.GetDesired().GetResources()[key].GetResource().AsMap()
	return o["kind"] == "Deployment" && strings.HasSuffix(nested(o, "metadata", "name").(string), "-deployment-vllm")
}

func equalJSON(a any, b map[string]any) bool {
	am, ok := a.(map[string]any)
	if !ok || len(am) != len(b) {
		return false
	}
	for k, v := range b {
		if am[k] != v {
			return false
		}
	}
	return true
}
