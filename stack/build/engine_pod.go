package build

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

func transferPorts(e resolve.Engine) []corev1.ContainerPort {
	switch {
	case e.Role == "":
		return nil
	case e.Transfer == resolve.TransferLMCache:
		return lmcachePDPorts(e)
	}
	return nixlPorts(e)
}

func transferServicePorts(e resolve.Engine) []corev1.ServicePort {
	if e.Role == "" || e.Transfer != resolve.TransferLMCache {
		return nil
	}
	return lmcachePDServicePorts(e)
}

// nixlPorts are the side channel's listeners: one per tensor parallel rank
// up to vLLM 0.11.0, one from 0.11.1 (data parallel size 1).
func nixlPorts(e resolve.Engine) []corev1.ContainerPort {
	n := int32(1)
	if e.VLLM.Version.Less(resolve.NIXLOneListenerSince) {
		n = e.TensorParallel
	}
	ports := make([]corev1.ContainerPort, 0, n)
	for i := range n {
		name := names.NIXLPortName
		if i > 0 {
			name += "-" + strconv.Itoa(int(i))
		}
		ports = append(ports, corev1.ContainerPort{Name: name, ContainerPort: names.NIXLSideChannelPort + i, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// hostNamespaces puts a group's pods in the node's PID and IPC namespaces
// when the stack asks for it: legacy CUDA IPC handles cannot be opened
// across PID namespaces, so UCX's cuda_ipc reaches a pod on the same node
// only so (disagg.tsv, UCX and vLLM rows). Never without the field: it is
// privileged.
func hostNamespaces(pod *corev1.PodSpec, e resolve.Engine) {
	if e.Role != "" && resolve.Enabled(e.Cfg.Disaggregation.HostPIDAndIPC) {
		pod.HostPID, pod.HostIPC = true, true
	}
}

// lmcachePDPorts: the decode engine's receiver listens; the sender only
// connects.
func lmcachePDPorts(e resolve.Engine) []corev1.ContainerPort {
	if e.Role != resolve.RoleDecode {
		return nil
	}
	return []corev1.ContainerPort{{Name: names.LMCacheReceiverPortName, ContainerPort: names.LMCacheReceiverPort, Protocol: corev1.ProtocolTCP}}
}

// lmcachePDServicePorts: the sender reaches the receiver through the decode
// group's Service, as in the chart.
func lmcachePDServicePorts(e resolve.Engine) []corev1.ServicePort {
	if e.Role != resolve.RoleDecode {
		return nil
	}
	return []corev1.ServicePort{{Name: names.LMCacheReceiverPortName, Port: names.LMCacheReceiverPort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromString(names.LMCacheReceiverPortName)}}
}

const (
	EngineContainer = "vllm"
)

const (
	lmcacheVLLMBinary = "/opt/venv/bin/vllm"
)

// engineTemplate is the pod template of one model's vLLM engines.
func engineTemplate(s *resolve.Stack, e resolve.Engine) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: withExtraLabels(enginePodLabels(s.Name, e), e.Cfg.Pod.Labels), Annotations: e.Cfg.Pod.Annotations},
		Spec:       EnginePod(s, e),
	}
}

// EnginePod is the pod of an engine: its containers, volumes and scheduling.
func EnginePod(s *resolve.Stack, e resolve.Engine) corev1.PodSpec {
	v := e.Cfg.VLLMConfig
	pod := corev1.PodSpec{
		InitContainers: e.Cfg.Pod.InitContainers,
		Containers:     []corev1.Container{engineContainerSpec(s, e)},
		Volumes:        engineVolumes(s, e),
	}
	if v.ImagePullSecretName != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: v.ImagePullSecretName}}
	}
	if e.LoRASidecar {
		pod.Containers = append(pod.Containers, loraSidecar(e))
	}
	if e.RoutingSidecar {
		pod.Containers = append(pod.Containers, routingSidecar(s))
	}
	schedule(&pod, e.Cfg.Scheduling)
	podIdentity(&pod, e.Cfg.Pod)
	if e.RuntimeAdapters {
		withAdapterSync(s, e, &pod)
	}
	hostNamespaces(&pod, e)
	drain(&pod, e)
	return pod
}

func engineContainerSpec(s *resolve.Stack, e resolve.Engine) corev1.Container {
	v := e.Cfg.VLLMConfig
	image := resolve.ImageRef(v.ImagePullRegistry, v.Image)
	command := []string{"vllm", "serve"}
	if strings.Contains(image, resolve.LMCacheImage) {
		command[0] = lmcacheVLLMBinary
	}
	// A multi-node group on Ray wraps or replaces `vllm serve`.
	command, args := multiNodeCommand(e, command, EngineArgs(e))
	// With sleep mode, where the router reads it.
	command, args = sleepModeCommand(e, command, args)
	p := e.Cfg.Probes
	return corev1.Container{
		Name:            EngineContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullPolicy(v.ImagePullPolicy),
		Command:         command,
		Args:            args,
		Env:             engineEnv(s, e),
		EnvFrom:         e.Cfg.EnvFrom,
		Ports:           EnginePorts(s, e),
		Resources:       engineResources(e),
		VolumeMounts:    EngineVolumeMounts(e),
		// Large models take minutes to download and load: the startup
		// probe's budget grows with the model's size; see StartupProbe.
		StartupProbe:    StartupProbe(e),
		ReadinessProbe:  tune(httpProbe(e.VLLMPort, 5, 3), p.Readiness),
		LivenessProbe:   tune(httpProbe(e.VLLMPort, 10, 3), p.Liveness),
		SecurityContext: engineSecurityContext(e),
	}
}

// EnginePorts: the API port, with kvaware routing the LMCache worker's,
// with precise prefix-cache routing the KV events'.
func EnginePorts(s *resolve.Stack, e resolve.Engine) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: names.EnginePortName, ContainerPort: e.VLLMPort, Protocol: corev1.ProtocolTCP}}
	if e.KVAware {
		ports = append(ports, corev1.ContainerPort{Name: names.LMCacheWorkerPortName, ContainerPort: e.WorkerPort, Protocol: corev1.ProtocolTCP})
	}
	ports = append(ports, precisePrefixPorts(e)...)
	return append(ports, transferPorts(e)...)
}

func engineResources(e resolve.Engine) corev1.ResourceRequirements {
	r := e.Cfg.Resources
	var out corev1.ResourceRequirements
	requests := corev1.ResourceList{}
	if r.CPU != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(r.CPU)
	}
	if r.Memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(r.Memory)
	}
	limits := corev1.ResourceList{}
	if r.CPULimit != "" {
		limits[corev1.ResourceCPU] = resource.MustParse(r.CPULimit)
	}
	if r.MemoryLimit != "" {
		limits[corev1.ResourceMemory] = resource.MustParse(r.MemoryLimit)
	}
	if n, _ := resolve.GPUs(r.GPU); n > 0 {
		// Extended resources cannot be overcommitted: Kubernetes requires
		// the limit to equal the request.
		q := *resource.NewQuantity(n, resource.DecimalSI)
		requests[corev1.ResourceName(r.GPUType)] = q
		limits[corev1.ResourceName(r.GPUType)] = q
	}
	if len(requests) > 0 {
		out.Requests = requests
	}
	if len(limits) > 0 {
		out.Limits = limits
	}
	return out
}
