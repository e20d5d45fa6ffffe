package stack

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Allowed values, in the order error messages list them.
var (
	dtypes               = []string{"auto", "half", "float16", "bfloat16", "float", "float32"}
	deploymentStrategies = []string{"RollingUpdate", "Recreate"}
	pullPolicies         = []string{"Always", "IfNotPresent", "Never"}
	remoteSerdes         = []string{"naive", "cachegen"}
	routerTypes          = []string{"roundrobin", "session", "prefixaware", "kvaware"}
	accessModes          = []string{"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
	discoveryTypes       = []string{"pod-ip", discoveryServiceName}
	serviceTypes         = []string{"ClusterIP", "NodePort", "LoadBalancer"}
)

// validate checks a decoded spec and its resolved engines. Checks on a single
// field name the field where the user wrote it; checks across fields run on
// the merged engine, so a models[] item is checked with what it inherits.
func validate(id Identity, spec *v1alpha1.ProductionStackSpec, s *resolvedStack) Findings {
	var f Findings
	engs, r := s.engines, s.router
	validateStackName(&f, id)
	switch {
	case spec.Model != nil && spec.Models != nil: // the XRD's has(): an empty list counts as set
		f.errorf("spec.model and spec.models are both set: set spec.model for one model or spec.models for several, not both")
	case spec.Model == nil && len(spec.Models) == 0:
		f.errorf("spec.model is required: set spec.model (one model) or spec.models (several models behind one router)")
	}
	validateLayers(&f, spec, engs)
	validateModels(&f, engs)
	for _, e := range engs {
		validateEngine(&f, e)
		validateInitContainers(&f, s, e)
		validateVLLMVersion(&f, e)
		validateEngineMistakes(&f, e)
		warnOversized(&f, e)
		warnTensorParallelHeads(&f, e)
		validateMultiNode(&f, e)
		validateExtraArgs(&f, e)
		validateRuntimeAdapters(&f, s, e)
		validateLoRALimits(&f, e)
	}
	validateRouter(&f, spec.RouterConfig, r)
	validateRouting(&f, spec.RouterConfig, r, engs)
	validateDisaggregation(&f, spec, s)
	validateExtension(&f, spec, s)
	validateObjectives(&f, s)
	validateScaleToZero(&f, s)
	if len(f.Errors) == 0 {
		// The router's version is checked against the arguments it would
		// get, which only a valid stack has.
		validateRouterVersion(&f, s)
		validateSleepMode(&f, s)
		validateLMCacheLockstep(&f, s)
	}
	validateMonitoring(&f, spec.Monitoring)
	validateNetworkPolicy(&f, spec.NetworkPolicy)
	validateCacheServer(&f, spec)
	if len(f.Errors) == 0 {
		// Annotations that are pod settings are checked against the pods
		// they go on, which only a valid stack builds.
		validatePodAnnotations(&f, s)
	}
	return f
}

func validateStackName(f *Findings, id Identity) {
	field := "metadata.name"
	if id.Legacy {
		field = "the claim's metadata.name"
	}
	s := dnsLabel(id.Name)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		f.errorf("%s %q cannot name the stack's Services (%s-router-service must be a DNS-1035 label): use a name that starts with a letter", field, id.Name, id.Name)
	}
}

// validateModels checks each model's own fields and that names are unique,
// also once made DNS labels (they name the objects).
func validateModels(f *Findings, engs []engine) {
	byName := map[string]string{}
	byID := map[string]engine{}
	for _, e := range engs {
		if e.role == roleDecode {
			continue // a disaggregated model is checked once, with its prefill group
		}
		m, p := e.model, e.path
		switch {
		case m.Name == "":
			f.errorf("%s.name is required: name the model, e.g. llama3", p)
		case e.id == "":
			f.errorf("%s.name %q cannot be made a DNS label for object names: use letters, digits, '-' or '.'", p, m.Name)
		default:
			if other, ok := byName[m.Name]; ok {
				f.errorf("%s.name %q is also the name of %s: model names must be unique within a stack", p, m.Name, other)
			} else if other, ok := byID[e.id]; ok {
				f.errorf("%s.name %q and %s.name %q both make the object name %q: rename one of them", p, m.Name, other.path, other.model.Name, e.id)
			}
			byName[m.Name] = p
			byID[e.id] = e
		}
		if m.Path == "" && m.ModelURL == "" {
			f.errorf("%s: set modelURL (a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct) or path (a local path to the model files)", p)
		}
		if n := len(chatTemplateKey) + len(m.ChatTemplate); n > maxConfigMapBytes {
			f.errorf("%s.chatTemplate is %d bytes: the ConfigMap that holds it takes at most %d bytes of template; shorten the template", p, len(m.ChatTemplate), maxConfigMapBytes-len(chatTemplateKey))
		}
		if m.EnableTool && m.ToolCallParser == "" {
			f.errorf("%s.toolCallParser is required when enableTool is true: set a parser such as hermes, llama3_json or mistral (vLLM refuses to start without one)", p)
		}
		if len(m.LoRAAdapters) > 0 && !m.EnableLoRA {
			f.errorf("%s.loraAdapters needs enableLoRA: true: vLLM loads adapters only with LoRA enabled", p)
		}
		for i, a := range m.LoRAAdapters {
			if a.Name == "" || a.Path == "" {
				f.errorf("%s.loraAdapters[%d] needs a name and a path", p, i)
			}
			validateLoRAShape(f, p, i, a.Name, a.Path)
		}
		validateModelShapes(f, p, m.Path, m.ModelURL, m.ServedModelName, m.ToolCallParser)
		if m.Revision != "" && !modelRevision.MatchString(m.Revision) {
			f.errorf("%s.revision %q is invalid: use a branch, tag or commit of the model's repository, such as main or a commit hash (letters, digits, '.', '_', '-' and '/', starting with a letter or digit)", p, m.Revision)
		}
		oneOf(f, p+".dtype", m.DType, dtypes)
		atLeast(f, p+".maxNumSeqs", m.MaxNumSeqs, 1)
		atLeast(f, p+".maxModelLen", m.MaxModelLen, 1)
	}
}

// modelRevision is the XRD's pattern of model.revision: a Git revision
// that cannot be taken for a flag of vllm serve.
var modelRevision = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// decimalFraction is the XRD's pattern of gpuMemoryUtilization, without the
// empty string: digits and one '.', nothing else.
var decimalFraction = regexp.MustCompile(`^([01](\.[0-9]+)?|\.[0-9]+)$`)

// maxConfigMapBytes is the most a ConfigMap's keys and values may hold
// together; the API server refuses a larger one.
const maxConfigMapBytes = 1 << 20

// validateLayers checks every layer of every engine once, each as written:
// the top level, each models[] item, each disaggregation group.
func validateLayers(f *Findings, spec *v1alpha1.ProductionStackSpec, engs []engine) {
	seen := map[string]bool{}
	check := func(l layer) {
		if !seen[l.path] {
			seen[l.path] = true
			validateBlocks(f, l)
		}
	}
	check(layer{path: "spec", cfg: spec.EngineConfig}) // also when no model is set
	for _, e := range engs {
		for _, l := range e.layers {
			check(l)
		}
	}
	for i, m := range spec.Models { // also the items of a stack that is refused before its engines
		check(layer{path: fmt.Sprintf("spec.models[%d]", i), cfg: m.EngineConfig})
	}
}

// validateBlocks checks the engine blocks of a layer as written, before
// merging; messages name each field where the layer's user writes it.
func validateBlocks(f *Findings, l layer) {
	c, at := l.cfg, l.at
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
		serverFlags(f, p+".extraArgs", v.ExtraArgs, enginePort)
	}
	if l := c.LMCacheConfig; l != nil {
		p := at("lmcacheConfig")
		for _, b := range []struct{ field, v string }{{"cpuOffloadingBufferSize", l.CPUOffloadingBufferSize}, {"diskOffloadingBufferSize", l.DiskOffloadingBufferSize}} {
			if _, err := gibibytes(b.v); b.v != "" && err != nil {
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
		quantity(f, p+".cpu", r.CPU, "4 or 3500m")
		quantity(f, p+".memory", r.Memory, "16Gi or 16000Mi")
		quantity(f, p+".cpuLimit", r.CPULimit, "8 or 7500m")
		quantity(f, p+".memoryLimit", r.MemoryLimit, "32Gi or 32000Mi")
		quantity(f, p+".gpuMemory", r.GPUMemory, "80Gi")
		if q, err := parseQuantity(r.GPUMemory); err == nil && q.IsZero() {
			f.errorf("%s.gpuMemory %q is invalid: a GPU's memory is more than 0; use the memory of one GPU, such as 80Gi, or leave gpuMemory out", p, r.GPUMemory)
		}
		if _, err := gpus(r.GPU); err != nil {
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
	if s := c.Storage; s != nil {
		p := at("storage")
		quantity(f, p+".shmSize", s.ShmSize, "20Gi")
		if s.EmptyDir != nil {
			quantity(f, p+".emptyDir.sizeLimit", s.EmptyDir.SizeLimit, "100Gi")
			if s.ExistingClaimName != "" {
				f.errorf("%s: set emptyDir or existingClaimName, not both", p)
			}
		}
		validateExtraVolumes(f, p, s.ExtraVolumes, reservedVolumes)
		quantity(f, p+".size", s.Size, "50Gi")
		if q, err := parseQuantity(s.Size); err == nil && q.IsZero() {
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
var reservedVolumes = map[string]bool{volumeShm: true, volumeLMCacheDisk: true}

// reservedLabels are the labels the stack sets on every engine pod; the
// selectors, the router and the LoRA controller rely on them.
var reservedLabels = []string{LabelName, LabelInstance, LabelComponent, labelPartOf, labelManagedBy, labelModel}

// validatePod checks the scheduling, pod, probes, rollout and disruption
// blocks of a layer as written.
func validatePod(f *Findings, l layer) {
	c, at := l.cfg, l.at
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
			if msgs := validation.IsDNS1123Label(ic.Name); len(msgs) > 0 || ic.Name == engineContainer {
				f.errorf("%s.initContainers[%d].name %q is invalid: use a DNS label other than %q", p, i, ic.Name, engineContainer)
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

// validateEngine runs the checks that span fields, on a merged engine.
func validateEngine(f *Findings, e engine) {
	c, p := e.cfg, e.block
	if c.DeploymentStrategy == string(appsv1.RecreateDeploymentStrategyType) && c.RollingUpdate != nil {
		f.errorf("%s: rollingUpdate is set but deploymentStrategy is Recreate: remove rollingUpdate or use RollingUpdate", p)
	}
	validateOwnVolumeNames(f, e)
	validateExtraMounts(f, e)
	validateStartupBudget(f, e)
	n, err := gpus(c.Resources.GPU)
	_, multi := multiNode(e)
	const tpField, ppField, gpuField = "vllmConfig.tensorParallelSize", "vllmConfig.pipelineParallelSize", "resources.gpu"
	at, name := e.where(tpField, ppField, gpuField)
	tpName, gpuName := name(tpField), name(gpuField)
	if tp, pp := c.VLLMConfig.TensorParallelSize, c.VLLMConfig.PipelineParallelSize; pp != nil && err == nil && !multi && int64(ptr.Deref(tp, 1))*int64(*pp) > n {
		f.errorf("%s: %s %d × %s %d needs %d GPUs but %s is %q: raise %s, lower the two, or spread each replica over nodes with multiNode", at, tpName, ptr.Deref(tp, 1), leaf(name(ppField)), *pp, int64(ptr.Deref(tp, 1))*int64(*pp), gpuName, c.Resources.GPU, gpuName)
	} else if tp := c.VLLMConfig.TensorParallelSize; tp != nil && err == nil && !multi && int64(*tp) > n {
		f.errorf("%s: %s %d needs %d GPUs but %s is %q: raise %s or lower %s", at, tpName, *tp, *tp, gpuName, c.Resources.GPU, gpuName, leaf(tpName))
	}
	for _, l := range []struct{ name, request, limit string }{
		{"cpu", c.Resources.CPU, c.Resources.CPULimit},
		{"memory", c.Resources.Memory, c.Resources.MemoryLimit},
	} {
		req, errReq := parseQuantity(l.request)
		lim, errLim := parseQuantity(l.limit)
		if errReq == nil && errLim == nil && lim.Cmp(req) < 0 {
			reqField, limField := "resources."+l.name, "resources."+l.name+"Limit"
			at, name := e.where(reqField, limField)
			f.errorf("%s: %s %s is less than %s %s: Kubernetes requires a limit of at least the request; raise the limit or lower the request", at, name(limField), l.limit, name(reqField), l.request)
		}
	}
	if enabled(c.LMCacheConfig.Enabled) && c.LMCacheConfig.CPUOffloadingBufferSize != "" && c.Resources.Memory != "" {
		buf, errBuf := gibibytes(c.LMCacheConfig.CPUOffloadingBufferSize)
		mem, errMem := parseQuantity(c.Resources.Memory)
		if errBuf == nil && errMem == nil && buf*gib >= mem.AsApproximateFloat64() {
			at, name := e.where("lmcacheConfig.cpuOffloadingBufferSize", "resources.memory")
			f.errorf("%s: %s %s must be less than %s %s: the buffer lives in the engine's memory; raise %s or lower the buffer",
				at, name("lmcacheConfig.cpuOffloadingBufferSize"), c.LMCacheConfig.CPUOffloadingBufferSize, name("resources.memory"), c.Resources.Memory, name("resources.memory"))
		}
	}
	if ml := c.VLLMConfig.MaxLoras; ml != nil && *ml > 0 && !e.model.EnableLoRA {
		f.warnf("%s: vllmConfig.maxLoras %d has no effect because %s.enableLoRA is false", p, *ml, e.path)
	}
	if *c.Replicas > 1 && enabled(c.Storage.Enabled) && onlyReadWriteOnce(c.Storage) {
		at, _ := e.where("replicas")
		f.warnf("%s: storage is ReadWriteOnce but replicas is %d: replicas scheduled on other nodes cannot mount the model cache; use accessModes [ReadWriteMany] or one replica", at, *c.Replicas)
	}
}

// leaf is a field's name without its block when the message names it
// relative to one, as the fix repeats it; a full path (spec…) stays whole.
func leaf(field string) string {
	if strings.HasPrefix(field, "spec") {
		return field
	}
	return field[strings.LastIndexByte(field, '.')+1:]
}

func validateRouter(f *Findings, rc *v1alpha1.RouterConfig, r router) {
	const p = "spec.routerConfig"
	if !isDisaggregatedRouting(r.routerType) { // set for a disaggregated model, never by the stack
		oneOf(f, p+".routerType", r.routerType, routerTypes)
	}
	for _, c := range r.sessionKey {
		if !isTokenChar(c) {
			f.errorf("%s.sessionKey %q is not an HTTP header name: use letters, digits and '-', e.g. x-user-id", p, r.sessionKey)
			break
		}
	}
	if rc == nil {
		return
	}
	atLeast(f, p+".replicas", rc.Replicas, 0)
	oneOf(f, p+".imagePullPolicy", rc.ImagePullPolicy, pullPolicies)
	objectName(f, p+".imagePullSecretName", rc.ImagePullSecretName)
	validateScheduling(f, p+".scheduling", rc.Scheduling)
	annotationKeys(f, p+".podAnnotations", rc.PodAnnotations)
	objectName(f, p+".serviceAccountName", rc.ServiceAccountName)
	notSyncAccount(f, p+".serviceAccountName", rc.ServiceAccountName)
	validateRouterVolumes(f, p, rc.ExtraVolumes, rc.ExtraVolumeMounts)
	oneOf(f, p+".k8sServiceDiscoveryType", rc.K8sServiceDiscoveryType, discoveryTypes)
	image(f, p+".image", rc.Image)
	for i, e := range rc.Env {
		if !isEnvVarName(e.Name) {
			f.errorf("%s.env[%d].name %q is not a valid environment variable name: use printable ASCII characters other than '='", p, i, e.Name)
		}
		if e.Value != "" && e.ValueFrom != nil {
			f.errorf("%s.env[%d]: set value or valueFrom, not both", p, i)
		}
		validateEnvSource(f, fmt.Sprintf("%s.env[%d]", p, i), e)
	}
	if rc.Resources != nil {
		validateResourceRequirements(f, p+".resources", *rc.Resources)
	}
	literalSecrets(f, p+".env", rc.Env)
	serverFlags(f, p+".extraArgs", rc.ExtraArgs, routerPort)
	if k := rc.APIKeySecret; k != nil {
		if k.Name == "" {
			f.errorf("%s.apiKeySecret.name is required: name the Secret that holds the API key", p)
		}
		objectName(f, p+".apiKeySecret.name", k.Name)
	}
	if svc := rc.Service; svc != nil {
		oneOf(f, p+".service.type", svc.Type, serviceTypes)
		if svc.Port != nil && (*svc.Port < 1 || *svc.Port > 65535) {
			f.errorf("%s.service.port %d is invalid: must be a port number from 1 to 65535", p, *svc.Port)
		}
		annotationKeys(f, p+".service.annotations", svc.Annotations)
		if n := svc.NodePort; n != nil {
			switch {
			case *n < 30000 || *n > 32767:
				f.errorf("%s.service.nodePort %d is invalid: must be from 30000 to 32767, Kubernetes' default node port range", p, *n)
			case r.serviceType != corev1.ServiceTypeNodePort && r.serviceType != corev1.ServiceTypeLoadBalancer:
				f.errorf("%s.service.nodePort is set but service.type is %s: use type NodePort or LoadBalancer, or remove nodePort", p, r.serviceType)
			}
		}
	}
	validatePDB(f, p+".podDisruptionBudget", rc.PodDisruptionBudget)
	validateRouterAutoscaling(f, p+".autoscaling", rc.Autoscaling)
	validateIngress(f, p+".ingress", rc.Ingress)
	validateHTTPRoute(f, p+".httpRoute", rc.HTTPRoute)
}

// labelMap checks label keys and values, in key order.
func labelMap(f *Findings, field string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			f.errorf("%s key %q is not a valid label key: %s", field, k, strings.Join(msgs, "; "))
		}
		if !isLabelValue(m[k]) {
			f.errorf("%s[%s] %q is not a valid label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", field, k, m[k])
		}
	}
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// intOrPercent checks a count or percentage such as 1 or "25%".
func intOrPercent(f *Findings, field string, v *intstr.IntOrString) {
	if v == nil {
		return
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			f.errorf("%s %d is invalid: must be 0 or more", field, v.IntVal)
		}
		return
	}
	// Digits only: Atoi also reads "+5" and "-0", which the API server
	// and LWS's webhook refuse as percentages.
	n, ok := strings.CutSuffix(v.StrVal, "%")
	if x, err := strconv.Atoi(n); !ok || err != nil || x < 0 || x > 100 || strings.ContainsAny(n, "+-") {
		f.errorf("%s %q is invalid: use a number such as 1 or a percentage such as \"25%%\"", field, v.StrVal)
	}
}

func isZero(v *intstr.IntOrString) bool {
	return v != nil && (v.Type == intstr.Int && v.IntVal == 0 || v.Type == intstr.String && v.StrVal == "0%")
}

func onlyReadWriteOnce(s *v1alpha1.Storage) bool {
	if s.ExistingClaimName != "" {
		return false // the claim's modes are not ours to know
	}
	for _, m := range s.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return false
		}
	}
	return true
}

// isEnvVarName is Kubernetes' rule for environment variable names since 1.34:
// one or more printable ASCII characters other than '='.
func isEnvVarName(s string) bool {
	for _, c := range s {
		if c < ' ' || c > '~' || c == '=' {
			return false
		}
	}
	return s != ""
}

// isTokenChar reports whether c may appear in an HTTP header name (RFC 9110).
func isTokenChar(c rune) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

func oneOf(f *Findings, field, v string, allowed []string) {
	if v == "" {
		return
	}
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	f.errorf("%s %q is not supported: use one of %s", field, v, strings.Join(allowed, ", "))
}

func atLeast(f *Findings, field string, v *int32, minimum int32) {
	if v != nil && *v < minimum {
		if minimum == 0 {
			f.errorf("%s %d is invalid: must be 0 or more", field, *v)
			return
		}
		f.errorf("%s %d is invalid: must be at least %d", field, *v, minimum)
	}
}

func quantity(f *Findings, field, v, example string) {
	if v == "" {
		return
	}
	q, err := parseQuantity(v)
	switch {
	case errors.Is(err, errQuantityExponent):
		f.errorf("%s %s is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as %s", field, clipQuote(v), example)
	case err != nil || q.Sign() < 0:
		f.errorf("%s %q is not a Kubernetes quantity: use a value such as %s", field, v, example)
	case !quantityInRange(q):
		f.errorf("%s %s is too large: a Kubernetes quantity holds less than 8Ei; use a value such as %s", field, clipQuote(v), example)
	}
}

// errQuantityExponent: a quantity's exponent has more than two digits.
var errQuantityExponent = errors.New("the exponent is out of range")

// quantityExponent is the exponent of a quantity written as 1e3 or 5E-2
// (not the suffix E, exa).
var quantityExponent = regexp.MustCompile(`[eE][+-]?([0-9]+)$`)

// parseQuantity is resource.ParseQuantity for what the user wrote. A
// quantity whose exponent has more than two digits is refused before it is
// parsed: apimachinery takes seconds to parse 1e-17170000 or to compare
// 1e17170000 (found by FuzzQuantities), and no quantity Kubernetes holds
// (1n to 8Ei) needs one.
func parseQuantity(v string) (resource.Quantity, error) {
	if m := quantityExponent.FindStringSubmatch(v); m != nil && len(m[1]) > 2 {
		return resource.Quantity{}, errQuantityExponent
	}
	return resource.ParseQuantity(v)
}

// maxQuantity is the largest quantity that stays itself: larger ones are
// clamped to it ("1000000000000000000Ki") or written back as another value
// ("1000000000000000000000" as "1").
var maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// quantityInRange reports whether q is below maxQuantity and is written as
// itself, so the objects say what the user wrote.
func quantityInRange(q resource.Quantity) bool {
	if q.Cmp(maxQuantity) >= 0 {
		return false
	}
	again, err := parseQuantity(q.String())
	return err == nil && again.Cmp(q) == 0
}

func objectName(f *Findings, field, v string) {
	if v == "" {
		return
	}
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		f.errorf("%s %q is not a valid object name: %s", field, v, strings.Join(msgs, "; "))
	}
}

// requiredName checks the name of an object that must be named.
func requiredName(f *Findings, field, v string) {
	if v == "" {
		f.errorf("%s is required", field)
	}
	objectName(f, field, v)
}

// gpus parses resources.gpu: a whole number, "" meaning none.
func gpus(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a whole number of GPUs: %q", v)
	}
	return n, nil
}

const gib = 1 << 30

// gibibytes reads an LMCache buffer size, a Kubernetes quantity such as 4Gi
// or a plain number of GiB such as 4 or 2.5, as a number of GiB: LMCache's
// LMCACHE_MAX_LOCAL_*_SIZE variables take a number of GB and cannot parse
// "4Gi". The size must be at least one byte and fit an int64 of bytes: a
// disk buffer sizes an emptyDir.
func gibibytes(v string) (float64, error) {
	g, err := parseGibibytes(v)
	if err != nil {
		return 0, err
	}
	if b := g * gib; !(b >= 1) || b >= math.MaxInt64 {
		return 0, fmt.Errorf("must be from 1 byte to 8 EiB: %q", v)
	}
	return g, nil
}

func parseGibibytes(v string) (float64, error) {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if !(x > 0) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("must be a positive number: %q", v)
		}
		return x, nil
	}
	q, err := parseQuantity(v)
	if err != nil {
		return 0, err
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("must be positive: %q", v)
	}
	return q.AsApproximateFloat64() / gib, nil
}
