package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// ValidateBlocks checks the engine blocks of a layer as written, before
// merging; messages name each field where the layer's user writes it.
func ValidateBlocks(f *Findings, l resolve.Layer) {
	c, at := l.Cfg, l.At
	oneOf(f, at("deploymentStrategy"), c.DeploymentStrategy, deploymentStrategies)
	atLeast(f, at("replicas"), c.Replicas, 0)
	for i, e := range c.Env {
		p := fmt.Sprintf("%s[%d]", at("env"), i)
		if !isEnvVarName(e.Name) {
			f.errorf("%s.name %q is not a valid environment variable name: use printable ASCII characters other than '='", p, e.Name)
		}
		if e.Value != "" && e.ValueFrom != nil {
			f.errorf("%s: set value or valueFrom, not both", p)
		}
		validateEnvSource(f, p, e)
	}
	for i, src := range c.EnvFrom {
		p := fmt.Sprintf("%s[%d]", at("envFrom"), i)
		switch {
		case (src.ConfigMapRef == nil) == (src.SecretRef == nil):
			f.errorf("%s: set one of configMapRef or secretRef", p)
		case src.ConfigMapRef != nil:
			requiredName(f, p+".configMapRef.name", src.ConfigMapRef.Name)
		default:
			requiredName(f, p+".secretRef.name", src.SecretRef.Name)
		}
		if src.Prefix != "" && !isEnvVarName(src.Prefix) {
			f.errorf("%s.prefix %q is not a valid environment variable name prefix: use printable ASCII characters other than '='", p, src.Prefix)
		}
	}
	if v := c.VLLMConfig; v != nil {
		p := at("vllmConfig")
		oneOf(f, p+".imagePullPolicy", v.ImagePullPolicy, pullPolicies)
		image(f, p+".image", v.Image)
		imageRegistry(f, p+".imagePullRegistry", v.ImagePullRegistry)
		objectName(f, p+".imagePullSecretName", v.ImagePullSecretName)
		if s := v.HFTokenSecret; s != nil {
			if s.Name == "" {
				f.errorf("%s.hfTokenSecret.name is required: name the Secret that holds the Hugging Face token", p)
			}
			objectName(f, p+".hfTokenSecret.name", s.Name)
			if s.Key != "" {
				if msgs := validation.IsConfigMapKey(s.Key); len(msgs) > 0 {
					f.errorf("%s.hfTokenSecret.key %q is not a valid Secret key: %s", p, s.Key, strings.Join(msgs, "; "))
				}
			}
		}
		if g := v.GPUMemoryUtilization; g != "" {
			// The XRD's pattern first: ParseFloat also reads NaN, Inf,
			// hex floats and exponents, which vLLM and the XRD refuse.
			if x, err := strconv.ParseFloat(g, 64); !decimalFraction.MatchString(g) || err != nil || x <= 0 || x > 1 {
				f.errorf("%s.gpuMemoryUtilization %q is invalid: must be a number greater than 0 and at most 1, e.g. \"0.9\"", p, g)
			}
		}
		atLeast(f, p+".tensorParallelSize", v.TensorParallelSize, 1)
		atLeast(f, p+".maxLoras", v.MaxLoras, 0)
		atLeast(f, p+".maxCpuLoras", v.MaxCPULoras, 1)
		serverFlags(f, p+".extraArgs", v.ExtraArgs, names.EnginePort)
	}
	if l := c.LMCacheConfig; l != nil {
		p := at("lmcacheConfig")
		for _, b := range []struct{ field, v string }{{"cpuOffloadingBufferSize", l.CPUOffloadingBufferSize}, {"diskOffloadingBufferSize", l.DiskOffloadingBufferSize}} {
			if _, err := resolve.Gibibytes(b.v); b.v != "" && err != nil {
				f.errorf("%s.%s %q is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4", p, b.field, b.v)
			}
		}
		oneOf(f, p+".remoteSerde", l.RemoteSerde, remoteSerdes)
		atLeast(f, p+".workerPort", l.WorkerPort, 1024)
		if h := l.WorkerHeartbeatTime; h != nil && (*h < 1 || *h > v1alpha1.MaxWorkerHeartbeatTime) {
			f.errorf("%s.workerHeartbeatTime %d is invalid: must be from 1 to %d seconds, below the 30 seconds after which the LMCache controller drops a silent worker", p, *h, v1alpha1.MaxWorkerHeartbeatTime)
		}
	}
	if r := c.Resources; r != nil {
		p := at("resources")
		Quantity(f, p+".cpu", r.CPU, "4 or 3500m")
		Quantity(f, p+".memory", r.Memory, "16Gi or 16000Mi")
		Quantity(f, p+".cpuLimit", r.CPULimit, "8 or 7500m")
		Quantity(f, p+".memoryLimit", r.MemoryLimit, "32Gi or 32000Mi")
		Quantity(f, p+".gpuMemory", r.GPUMemory, "80Gi")
		if q, err := resolve.ParseQuantity(r.GPUMemory); err == nil && q.IsZero() {
			f.errorf("%s.gpuMemory %q is invalid: a GPU's memory is more than 0; use the memory of one GPU, such as 80Gi, or leave gpuMemory out", p, r.GPUMemory)
		}
		if _, err := resolve.GPUs(r.GPU); err != nil {
			f.errorf("%s.gpu %q is invalid: must be a whole number of GPUs, e.g. \"1\"", p, r.GPU)
		}
		if r.GPUType != "" {
			if msgs := validation.IsQualifiedName(r.GPUType); len(msgs) > 0 || !strings.Contains(r.GPUType, "/") {
				f.errorf("%s.gpuType %q is not an extended resource name: use a name such as nvidia.com/gpu or amd.com/gpu", p, r.GPUType)
			}
		}
	}
	if l := c.LoRASidecar; l != nil {
		image(f, at("loraSidecar.image"), l.Image)
		if l.Resources != nil {
			validateResourceRequirements(f, at("loraSidecar.resources"), *l.Resources)
		}
	}
	validatePod(f, l)
	validateKVOffloadBlock(f, l)
	if s := c.Storage; s != nil {
		p := at("storage")
		Quantity(f, p+".shmSize", s.ShmSize, "20Gi")
		if s.EmptyDir != nil {
			Quantity(f, p+".emptyDir.sizeLimit", s.EmptyDir.SizeLimit, "100Gi")
			if s.ExistingClaimName != "" {
				f.errorf("%s: set emptyDir or existingClaimName, not both", p)
			}
		}
		validateExtraVolumes(f, p, s.ExtraVolumes, reservedVolumes)
		Quantity(f, p+".size", s.Size, "50Gi")
		if q, err := resolve.ParseQuantity(s.Size); err == nil && q.IsZero() {
			f.errorf("%s.size %q is invalid: a claim must request more than 0 bytes; use a size such as 50Gi", p, s.Size)
		}
		if s.StorageClassName != nil {
			objectName(f, p+".storageClassName", *s.StorageClassName)
		}
		objectName(f, p+".existingClaimName", s.ExistingClaimName)
		for i, m := range s.AccessModes {
			oneOf(f, fmt.Sprintf("%s.accessModes[%d]", p, i), string(m), accessModes)
		}
		// The claim's modes, as ValidatePersistentVolumeClaimSpec
		// (k8s.io/kubernetes pkg/apis/core/validation) refuses them.
		if slices.Contains(s.AccessModes, corev1.ReadWriteOncePod) && slices.ContainsFunc(s.AccessModes, func(m corev1.PersistentVolumeAccessMode) bool {
			return m != corev1.ReadWriteOncePod && slices.Contains(accessModes, string(m))
		}) {
			f.errorf("%s.accessModes %v is invalid: ReadWriteOncePod cannot be combined with other access modes; use [ReadWriteOncePod] alone", p, s.AccessModes)
		}
		// The XRD's has(): an empty accessModes list counts as set.
		if s.ExistingClaimName != "" && (s.Size != "" || s.StorageClassName != nil || s.AccessModes != nil) {
			f.errorf("%s.existingClaimName is set, so the stack mounts a claim it does not own: leave out %s.size, storageClassName and accessModes", p, p)
		}
	}
}

// reservedVolumes are the engine pod's own volumes of fixed names; those
// named after the stack are checked per engine (validateOwnVolumeNames).
var reservedVolumes = map[string]bool{build.VolumeShm: true, build.VolumeLMCacheDisk: true}

// reservedLabels are the labels the stack sets on every engine pod; the
// selectors, the router and the LoRA controller rely on them.
var reservedLabels = []string{names.LabelName, names.LabelInstance, names.LabelComponent, names.LabelPartOf, names.LabelManagedBy, names.LabelModel}

// validatePod checks the scheduling, pod, probes, rollout and disruption
// blocks of a layer as written.
func validatePod(f *Findings, l resolve.Layer) {
	c, at := l.Cfg, l.At
	validateScheduling(f, at("scheduling"), c.Scheduling)
	if svc := c.Service; svc != nil {
		annotationKeys(f, at("service.annotations"), svc.Annotations)
	}
	if pc := c.Pod; pc != nil {
		p := at("pod")
		labelMap(f, p+".labels", pc.Labels)
		for _, k := range reservedLabels {
			if _, ok := pc.Labels[k]; ok {
				f.errorf("%s.labels[%s] would replace a label the stack sets on every engine pod: remove it", p, k)
			}
		}
		annotationKeys(f, p+".annotations", pc.Annotations)
		objectName(f, p+".serviceAccountName", pc.ServiceAccountName)
		apiProblems(f, p+".securityContext", kubeapi.PodSecurityContext(pc.SecurityContext))
		apiProblems(f, p+".containerSecurityContext", kubeapi.SecurityContext(pc.ContainerSecurityContext))
		for i, ic := range pc.InitContainers {
			if msgs := validation.IsDNS1123Label(ic.Name); len(msgs) > 0 || ic.Name == build.EngineContainer {
				f.errorf("%s.initContainers[%d].name %q is invalid: use a DNS label other than %q", p, i, ic.Name, build.EngineContainer)
			}
			if ic.Image == "" {
				f.errorf("%s.initContainers[%d].image is required", p, i)
			}
			validateContainer(f, fmt.Sprintf("%s.initContainers[%d]", p, i), ic)
		}
	}
	if pr := c.Probes; pr != nil {
		for _, probe := range []struct {
			name string
			p    *v1alpha1.Probe
		}{{"startup", pr.Startup}, {"readiness", pr.Readiness}, {"liveness", pr.Liveness}} {
			if probe.p == nil {
				continue
			}
			p := at("probes." + probe.name)
			atLeast(f, p+".initialDelaySeconds", probe.p.InitialDelaySeconds, 0)
			atLeast(f, p+".periodSeconds", probe.p.PeriodSeconds, 1)
			atLeast(f, p+".timeoutSeconds", probe.p.TimeoutSeconds, 1)
			atLeast(f, p+".failureThreshold", probe.p.FailureThreshold, 1)
		}
	}
	if ru := c.RollingUpdate; ru != nil {
		p := at("rollingUpdate")
		intOrPercent(f, p+".maxSurge", ru.MaxSurge)
		intOrPercent(f, p+".maxUnavailable", ru.MaxUnavailable)
		if isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) {
			f.errorf("%s: maxSurge and maxUnavailable cannot both be 0: a rollout could never make progress", p)
		}
	}
	validatePDB(f, at("podDisruptionBudget"), c.PodDisruptionBudget)
	validateAutoscaling(f, at("autoscaling"), c.Autoscaling)
}

// validateScheduling checks a scheduling block of engines, the router or
// the cache server.
func validateScheduling(f *Findings, p string, sc *v1alpha1.Scheduling) {
	if sc == nil {
		return
	}
	labelMap(f, p+".nodeSelector", sc.NodeSelector)
	apiProblems(f, p+".tolerations", kubeapi.Tolerations(sc.Tolerations))
	apiProblems(f, p+".affinity", kubeapi.Affinity(sc.Affinity))
	objectName(f, p+".runtimeClassName", sc.RuntimeClassName)
	objectName(f, p+".priorityClassName", sc.PriorityClassName)
	objectName(f, p+".schedulerName", sc.SchedulerName)
}

// annotationKeys checks annotation keys, in key order.
func annotationKeys(f *Findings, field string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			f.errorf("%s key %q is invalid: %s", field, k, strings.Join(msgs, "; "))
		}
	}
	annotationSize(f, field, m)
}

func validatePDB(f *Findings, p string, pdb *v1alpha1.PodDisruptionBudget) {
	if pdb == nil {
		return
	}
	intOrPercent(f, p+".minAvailable", pdb.MinAvailable)
	intOrPercent(f, p+".maxUnavailable", pdb.MaxUnavailable)
	if pdb.MinAvailable != nil && pdb.MaxUnavailable != nil {
		f.errorf("%s: set minAvailable or maxUnavailable, not both", p)
	}
}
