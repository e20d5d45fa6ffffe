package build

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// drain makes an engine pod stop without cutting requests (resolve.Drain):
// a preStop sleep keeps vLLM serving while the router, the picker and the
// Service's endpoints drop the pod (each on its deletionTimestamp), then
// SIGTERM starts vLLM's own drain (--shutdown-timeout); where vLLM cannot
// drain itself the sleep covers the drain as well. The routing sidecar in
// front of a decode engine stays for the whole drain, since requests in
// flight pass through it. A preStop sleep is Kubernetes' sleep action (on
// by default from 1.30, the oldest the stack supports): no shell or sleep
// binary is needed in the image.
func drain(pod *corev1.PodSpec, e resolve.Engine) {
	d := e.Drain
	if d.GraceSeconds == 0 {
		return
	}
	sleep, grace := d.PreStopSeconds, d.GraceSeconds
	if e.LWSWorker {
		sleep, grace = d.WorkerPreStopSeconds, d.WorkerGraceSeconds
	}
	pod.TerminationGracePeriodSeconds = ptr.To(grace)
	preStop(&pod.Containers[0], sleep)
	for i := range pod.Containers[1:] {
		if c := &pod.Containers[i+1]; c.Name == inferencepool.SidecarContainerName {
			preStop(c, d.RoutingDelay+d.Seconds)
		}
	}
}

// preStop sets a container's preStop sleep; none for 0 seconds (a zero sleep
// is refused by Kubernetes before 1.33).
func preStop(c *corev1.Container, seconds int32) {
	if seconds <= 0 {
		return
	}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: int64(seconds)}}}
}
