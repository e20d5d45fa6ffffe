package stack

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Ports and paths of the engine container. The router calls
// http://<podIP>:8000/v1/models on every engine pod it discovers.
const (
	enginePort        = 8000
	enginePortName    = "container-port"
	servicePort       = 80
	servicePortName   = "service-port"
	engineContainer   = "vllm"
	healthPath        = "/health"
	modelCachePath    = "/data"
	templatesPath     = "/templates"
	chatTemplateKey   = "chat-template.jinja"
	shmPath           = "/dev/shm"
	volumeShm         = "shm"
	lmcacheImage      = "lmcache/vllm-openai"
	lmcacheVLLMBinary = "/opt/venv/bin/vllm"
)

// engineTemplate is the pod template of one model's vLLM engines.
func engineTemplate(s *resolvedStack, e engine) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: withExtraLabels(enginePodLabels(s.name, e), e.cfg.Pod.Labels), Annotations: e.cfg.Pod.Annotations},
		Spec:       enginePod(s, e),
	}
}

// engineDeployment builds the Deployment of one model's vLLM engines.
func engineDeployment(s *resolvedStack, e engine) *appsv1.Deployment {
	podLabels := engineLabels(s.name, e)
	tmpl := engineTemplate(s, e)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.meta(s.names.engineDeployment(e.id), podLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(*e.cfg.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: engineSelector(s.name, e)},
			Strategy: strategy(e.cfg.DeploymentStrategy, e.cfg.RollingUpdate),
			// Above the startup probe's budget, so a model that is still
			// downloading is not reported as a failed rollout.
			ProgressDeadlineSeconds: ptr.To(progressDeadline(tmpl.Spec.Containers[0].StartupProbe)),
			Template:                tmpl,
		},
	}
	if autoscaled(e) {
		// The autoscaler owns them, once handed over (handOver).
		d.Spec.Replicas = nil
	}
	return d
}

func strategy(kind string, ru *v1alpha1.RollingUpdate) appsv1.DeploymentStrategy {
	if kind == string(appsv1.RecreateDeploymentStrategyType) {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	// A new engine pod must be ready before an old one stops: with
	// maxUnavailable 0 the model keeps serving through a rollout.
	r := &appsv1.RollingUpdateDeployment{
		MaxSurge:       ptr.To(intstr.FromInt32(1)),
		MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
	if ru != nil && ru.MaxSurge != nil {
		r.MaxSurge = ptr.To(*ru.MaxSurge)
	}
	if ru != nil && ru.MaxUnavailable != nil {
		r.MaxUnavailable = ptr.To(*ru.MaxUnavailable)
	}
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: r}
}

func enginePod(s *resolvedStack, e engine) corev1.PodSpec {
	v := e.cfg.VLLMConfig
	pod := corev1.PodSpec{
		InitContainers: e.cfg.Pod.InitContainers,
		Containers:     []corev1.Container{engineContainerSpec(s, e)},
		Volumes:        engineVolumes(s, e),
	}
	if v.ImagePullSecretName != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: v.ImagePullSecretName}}
	}
	if loraSidecarOn(e) {
		pod.Containers = append(pod.Containers, loraSidecar(e))
	}
	if routingSidecarOn(e) {
		pod.Containers = append(pod.Containers, routingSidecar(s))
	}
	schedule(&pod, e.cfg.Scheduling)
	podIdentity(&pod, e.cfg.Pod)
	if runtimeAdaptersOn(e) {
		withAdapterSync(s, e, &pod)
	}
	hostNamespaces(&pod, e)
	return pod
}

func engineContainerSpec(s *resolvedStack, e engine) corev1.Container {
	v := e.cfg.VLLMConfig
	image := imageRef(v.ImagePullRegistry, v.Image)
	command := []string{"vllm", "serve"}
	if strings.Contains(image, lmcacheImage) {
		command[0] = lmcacheVLLMBinary
	}
	// A multi-node group on Ray wraps or replaces `vllm serve`.
	command, args := multiNodeCommand(e, command, engineArgs(e))
	// With sleep mode, where the router reads it.
	command, args = sleepModeCommand(e, command, args)
	p := e.cfg.Probes
	return corev1.Container{
		Name:            engineContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullPolicy(v.ImagePullPolicy),
		Command:         command,
		Args:            args,
		Env:             engineEnv(s, e),
		EnvFrom:         e.cfg.EnvFrom,
		Ports:           enginePorts(s, e),
		Resources:       engineResources(e),
		VolumeMounts:    engineVolumeMounts(e),
		// Large models take minutes to download and load: the startup
		// probe's budget grows with the model's size; see startupProbe.
		StartupProbe:    startupProbe(e),
		ReadinessProbe:  tune(httpProbe(vllmPort(e), 5, 3), p.Readiness),
		LivenessProbe:   tune(httpProbe(vllmPort(e), 10, 3), p.Liveness),
		SecurityContext: e.cfg.Pod.ContainerSecurityContext,
	}
}

// enginePorts: the API port, and with kvaware routing the LMCache worker's.
func enginePorts(s *resolvedStack, e engine) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: enginePortName, ContainerPort: vllmPort(e), Protocol: corev1.ProtocolTCP}}
	if kvAware(s, e) {
		ports = append(ports, corev1.ContainerPort{Name: lmcacheWorkerPortName, ContainerPort: workerPort(e), Protocol: corev1.ProtocolTCP})
	}
	return append(ports, transferPorts(e)...)
}

func httpProbe(port int32, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: healthPath, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		FailureThreshold: failures,
	}
}

// engineArgs are the arguments of `vllm serve`, in a fixed order so the
// Deployment does not roll when nothing changed. The model is the positional
// (validated not to read as an option); every other value from the spec is
// --name=value (see opt); constants stay --name value; extraArgs are the
// user's own options, verbatim at the end.
func engineArgs(e engine) []string {
	m, v := e.model, e.cfg.VLLMConfig
	args := make([]string, 0, 32)
	if m.Path != "" {
		args = append(args, m.Path, opt("--served-model-name", e.served))
	} else {
		args = append(args, m.ModelURL)
		if m.ServedModelName != "" {
			args = append(args, opt("--served-model-name", m.ServedModelName))
		}
	}
	if m.Revision != "" {
		args = append(args, opt("--revision", m.Revision))
	}
	args = append(args, "--host", "0.0.0.0", "--port", strconv.Itoa(int(vllmPort(e))))
	if m.EnableLoRA {
		args = append(args, "--enable-lora")
	}
	if m.EnableTool {
		args = append(args, "--enable-auto-tool-choice")
	}
	if m.ToolCallParser != "" {
		args = append(args, opt("--tool-call-parser", m.ToolCallParser))
	}
	if m.ChatTemplate != "" {
		args = append(args, "--chat-template", templatesPath+"/"+chatTemplateKey)
	}
	if m.TrustRemoteCode {
		args = append(args, "--trust-remote-code")
	}
	if m.DType != "" {
		args = append(args, opt("--dtype", m.DType))
	}
	if m.MaxNumSeqs != nil {
		args = append(args, opt("--max-num-seqs", itoa(*m.MaxNumSeqs)))
	}
	if m.MaxModelLen != nil {
		args = append(args, opt("--max-model-len", itoa(*m.MaxModelLen)))
	}
	args = append(args, chunkedPrefillArg(e)...)
	args = appendSwitch(args, "enable-prefix-caching", v.EnablePrefixCaching)
	if v.TensorParallelSize != nil {
		args = append(args, opt("--tensor-parallel-size", itoa(*v.TensorParallelSize)))
	}
	if v.PipelineParallelSize != nil {
		args = append(args, opt("--pipeline-parallel-size", itoa(*v.PipelineParallelSize)))
	}
	if v.GPUMemoryUtilization != "" {
		args = append(args, opt("--gpu-memory-utilization", v.GPUMemoryUtilization))
	}
	if v.MaxLoras != nil && *v.MaxLoras > 0 {
		args = append(args, opt("--max-loras", itoa(*v.MaxLoras)))
	}
	args = append(args, loraLimitArgs(e)...)
	args = append(args, loraArgs(e)...)
	args = append(args, lmcacheArgs(e)...)
	args = append(args, transferArgs(e)...)
	args = append(args, multiNodeArgs(e)...)
	return append(args, v.ExtraArgs...)
}

// appendSwitch renders a tri-state flag: --name, --no-name, or nothing so
// vLLM keeps its own default.
func appendSwitch(args []string, name string, b *bool) []string {
	switch {
	case b == nil:
		return args
	case *b:
		return append(args, "--"+name)
	default:
		return append(args, "--no-"+name)
	}
}

// engineEnv computes the engine's environment, then applies the user's env:
// an entry named like a computed variable replaces it in place.
func engineEnv(s *resolvedStack, e engine) []corev1.EnvVar {
	v := e.cfg.VLLMConfig
	// POD_IP comes first, as in the chart: Kubernetes expands $(POD_IP) only
	// in variables after it, such as a user's LMCACHE_P2P_HOST: $(POD_IP).
	env := append(make([]corev1.EnvVar, 0, 16), podIPEnv)
	if enabled(e.cfg.Storage.Enabled) {
		env = append(env, corev1.EnvVar{Name: "HF_HOME", Value: modelCachePath})
	}
	if t := v.HFTokenSecret; t != nil {
		env = append(env, secretEnv("HF_TOKEN", t))
	}
	if k := s.router.apiKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	if e.model.EnableLoRA {
		env = append(env, corev1.EnvVar{Name: "VLLM_ALLOW_RUNTIME_LORA_UPDATING", Value: "True"})
	}
	env = append(env, useV1Env(e)...)
	env = append(env, lmcacheEnv(s, e)...)
	env = append(env, transferEnv(s, e)...)
	return overrideEnv(env, e.cfg.Env)
}

// podIPEnv is the pod's IP from the downward API.
var podIPEnv = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"},
}}

func engineResources(e engine) corev1.ResourceRequirements {
	r := e.cfg.Resources
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
	if n, _ := gpus(r.GPU); n > 0 {
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

// engineService builds the ClusterIP Service of one model's engines.
func engineService(s *resolvedStack, e engine) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: withAnnotations(s.meta(s.names.engineService(e.id), engineLabels(s.name, e)), e.cfg.Service.Annotations),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: engineSelector(s.name, e),
			Ports: append([]corev1.ServicePort{{
				Name: servicePortName, Port: servicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(enginePort),
			}}, transferServicePorts(e)...),
		},
	}
}

// chatTemplateConfigMap holds the model's chat template, mounted at
// /templates.
func chatTemplateConfigMap(s *resolvedStack, e engine) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: s.meta(s.names.chatTemplates(e.id), engineLabels(s.name, e)),
		Data:       map[string]string{chatTemplateKey: e.model.ChatTemplate},
	}
}

// imageRef joins registry and image unless image already names a registry
// host: its first path element has a '.' or ':' or is localhost, the rule
// container runtimes use.
func imageRef(registry, image string) string {
	if registry == "" {
		return image
	}
	if first, _, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return image
	}
	return strings.TrimSuffix(registry, "/") + "/" + image
}

// secretEnv is an environment variable read from a Secret, so the value
// never appears in the Deployment.
func secretEnv(name string, ref *v1alpha1.SecretKeySelector) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key},
	}}
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
