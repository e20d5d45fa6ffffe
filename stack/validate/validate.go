package validate

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Validate checks a resolved stack: its decoded spec and its engines. Checks
// on a single field name the field where the user wrote it; checks across
// fields run on the merged engine, so a models[] item is checked with what
// it inherits.
func Validate(s *resolve.Stack) Findings {
	var f Findings
	id, spec, engs, r := s.ID, s.Spec, s.Engines, s.Router
	ValidateStackName(&f, id)
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
		validateDataParallel(&f, e)
		validateExtraArgs(&f, e)
		validateRuntimeAdapters(&f, s, e)
		validateLoRALimits(&f, e)
		validateKVOffload(&f, e)
		validatePrefetch(&f, e)
	}
	validateRouter(&f, spec.RouterConfig, r)
	validateRouting(&f, spec.RouterConfig, r, engs)
	validateDisaggregation(&f, spec, s)
	validateExtension(&f, spec, s)
	validatePrecisePrefix(&f, s)
	validateObjectives(&f, s)
	validateScaleToZero(&f, s)
	validateCanary(&f, s)
	validateScalingSignal(&f, s)
	if len(f.Errors) == 0 {
		// The router's version is checked against the arguments it would
		// get, which only a valid stack has.
		validateRouterVersion(&f, s)
		validateSleepMode(&f, s)
		validateShutdown(&f, s)
		validateLMCacheLockstep(&f, s)
	}
	ValidateMonitoring(&f, spec.Monitoring)
	validateNetworkPolicy(&f, spec.NetworkPolicy)
	validateCacheServer(&f, spec)
	if len(f.Errors) == 0 {
		// Annotations that are pod settings are checked against the pods
		// they go on, which only a valid stack builds.
		validatePodAnnotations(&f, s)
	}
	return f
}

// ValidateStackName checks that the stack's name can name its Services.
func ValidateStackName(f *Findings, id resolve.Identity) {
	field := "metadata.name"
	if id.Legacy {
		field = "the claim's metadata.name"
	}
	s := names.DNSLabel(id.Name)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		f.errorf("%s %q cannot name the stack's Services (%s-router-service must be a DNS-1035 label): use a name that starts with a letter", field, id.Name, id.Name)
	}
}

// validateModels checks each model's own fields and that names are unique,
// also once made DNS labels (they name the objects).
func validateModels(f *Findings, engs []resolve.Engine) {
	byName := map[string]string{}
	byID := map[string]resolve.Engine{}
	for _, e := range engs {
		if e.Role == resolve.RoleDecode || e.Version != "" {
			continue // a disaggregated model is checked once, with its prefill group; a model with its canary
		}
		m, p := e.Model, e.Path
		switch {
		case m.Name == "":
			f.errorf("%s.name is required: name the model, e.g. llama3", p)
		case e.ID == "":
			f.errorf("%s.name %q cannot be made a DNS label for object names: use letters, digits, '-' or '.'", p, m.Name)
		default:
			if other, ok := byName[m.Name]; ok {
				f.errorf("%s.name %q is also the name of %s: model names must be unique within a stack", p, m.Name, other)
			} else if other, ok := byID[e.ID]; ok {
				f.errorf("%s.name %q and %s.name %q both make the object name %q: rename one of them", p, m.Name, other.Path, other.Model.Name, e.ID)
			}
			byName[m.Name] = p
			byID[e.ID] = e
		}
		if m.Path == "" && m.ModelURL == "" {
			f.errorf("%s: set modelURL (a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct) or path (a local path to the model files)", p)
		}
		if n := len(build.ChatTemplateKey) + len(m.ChatTemplate); n > maxConfigMapBytes {
			f.errorf("%s.chatTemplate is %d bytes: the ConfigMap that holds it takes at most %d bytes of template; shorten the template", p, len(m.ChatTemplate), maxConfigMapBytes-len(build.ChatTemplateKey))
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
		if m.Revision != "" && !ModelRevision.MatchString(m.Revision) {
			f.errorf("%s.revision %q is invalid: use a branch, tag or commit of the model's repository, such as main or a commit hash (letters, digits, '.', '_', '-' and '/', starting with a letter or digit)", p, m.Revision)
		}
		oneOf(f, p+".dtype", m.DType, dtypes)
		atLeast(f, p+".maxNumSeqs", m.MaxNumSeqs, 1)
		atLeast(f, p+".maxModelLen", m.MaxModelLen, 1)
	}
}

// validateLayers checks every layer of every engine once, each as written:
// the top level, each models[] item, each disaggregation group.
func validateLayers(f *Findings, spec *v1alpha1.ProductionStackSpec, engs []resolve.Engine) {
	seen := map[string]bool{}
	check := func(l resolve.Layer) {
		if !seen[l.Path] {
			seen[l.Path] = true
			ValidateBlocks(f, l)
		}
	}
	check(resolve.Layer{Path: "spec", Cfg: spec.EngineConfig}) // also when no model is set
	for _, e := range engs {
		for _, l := range e.Layers {
			check(l)
		}
	}
	for i, m := range spec.Models { // also the items of a stack that is refused before its engines
		check(resolve.Layer{Path: fmt.Sprintf("spec.models[%d]", i), Cfg: m.EngineConfig})
	}
}

// validateEngine runs the checks that span fields, on a merged engine.
func validateEngine(f *Findings, e resolve.Engine) {
	c, p := e.Cfg, e.Block
	if c.DeploymentStrategy == string(appsv1.RecreateDeploymentStrategyType) && c.RollingUpdate != nil {
		f.errorf("%s: rollingUpdate is set but deploymentStrategy is Recreate: remove rollingUpdate or use RollingUpdate", p)
	}
	validateOwnVolumeNames(f, e)
	validateExtraMounts(f, e)
	validateStartupBudget(f, e)
	n, err := resolve.GPUs(c.Resources.GPU)
	multi := e.MultiNode
	const tpField, ppField, gpuField = "vllmConfig.tensorParallelSize", "vllmConfig.pipelineParallelSize", "resources.gpu"
	at, name := e.Where(tpField, ppField, gpuField)
	tpName, gpuName := name(tpField), name(gpuField)
	multi = multi || e.DataParallel > 1 // with ranks, validateDataParallelGPUs checks the arithmetic
	if tp, pp := c.VLLMConfig.TensorParallelSize, c.VLLMConfig.PipelineParallelSize; pp != nil && err == nil && !multi && int64(ptr.Deref(tp, 1))*int64(*pp) > n {
		f.errorf("%s: %s %d × %s %d needs %d GPUs but %s is %q: raise %s, lower the two, or spread each replica over nodes with multiNode", at, tpName, ptr.Deref(tp, 1), resolve.Leaf(name(ppField)), *pp, int64(ptr.Deref(tp, 1))*int64(*pp), gpuName, c.Resources.GPU, gpuName)
	} else if tp := c.VLLMConfig.TensorParallelSize; tp != nil && err == nil && !multi && int64(*tp) > n {
		f.errorf("%s: %s %d needs %d GPUs but %s is %q: raise %s or lower %s", at, tpName, *tp, *tp, gpuName, c.Resources.GPU, gpuName, resolve.Leaf(tpName))
	}
	for _, l := range []struct{ name, request, limit string }{
		{"cpu", c.Resources.CPU, c.Resources.CPULimit},
		{"memory", c.Resources.Memory, c.Resources.MemoryLimit},
	} {
		req, errReq := resolve.ParseQuantity(l.request)
		lim, errLim := resolve.ParseQuantity(l.limit)
		if errReq == nil && errLim == nil && lim.Cmp(req) < 0 {
			reqField, limField := "resources."+l.name, "resources."+l.name+"Limit"
			at, name := e.Where(reqField, limField)
			f.errorf("%s: %s %s is less than %s %s: Kubernetes requires a limit of at least the request; raise the limit or lower the request", at, name(limField), l.limit, name(reqField), l.request)
		}
	}
	if resolve.Enabled(c.LMCacheConfig.Enabled) && c.LMCacheConfig.CPUOffloadingBufferSize != "" && c.Resources.Memory != "" {
		buf, errBuf := resolve.Gibibytes(c.LMCacheConfig.CPUOffloadingBufferSize)
		mem, errMem := resolve.ParseQuantity(c.Resources.Memory)
		if errBuf == nil && errMem == nil && buf*resolve.Gib >= mem.AsApproximateFloat64() {
			at, name := e.Where("lmcacheConfig.cpuOffloadingBufferSize", "resources.memory")
			f.errorf("%s: %s %s must be less than %s %s: the buffer lives in the engine's memory; raise %s or lower the buffer",
				at, name("lmcacheConfig.cpuOffloadingBufferSize"), c.LMCacheConfig.CPUOffloadingBufferSize, name("resources.memory"), c.Resources.Memory, name("resources.memory"))
		}
	}
	if ml := c.VLLMConfig.MaxLoras; ml != nil && *ml > 0 && !e.Model.EnableLoRA {
		f.warnf("%s: vllmConfig.maxLoras %d has no effect because %s.enableLoRA is false", p, *ml, e.Path)
	}
	if *c.Replicas > 1 && resolve.Enabled(c.Storage.Enabled) && onlyReadWriteOnce(c.Storage) {
		at, _ := e.Where("replicas")
		f.warnf("%s: storage is ReadWriteOnce but replicas is %d: replicas scheduled on other nodes cannot mount the model cache; use accessModes [ReadWriteMany] or one replica", at, *c.Replicas)
	}
}

func validateRouter(f *Findings, rc *v1alpha1.RouterConfig, r resolve.Router) {
	const p = "spec.routerConfig"
	if !resolve.IsDisaggregatedRouting(r.RouterType) { // set for a disaggregated model, never by the stack
		oneOf(f, p+".routerType", r.RouterType, routerTypes)
	}
	for _, c := range r.SessionKey {
		if !isTokenChar(c) {
			f.errorf("%s.sessionKey %q is not an HTTP header name: use letters, digits and '-', e.g. x-user-id", p, r.SessionKey)
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
	serverFlags(f, p+".extraArgs", rc.ExtraArgs, names.RouterPort)
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
			case r.ServiceType != corev1.ServiceTypeNodePort && r.ServiceType != corev1.ServiceTypeLoadBalancer:
				f.errorf("%s.service.nodePort is set but service.type is %s: use type NodePort or LoadBalancer, or remove nodePort", p, r.ServiceType)
			}
		}
	}
	validatePDB(f, p+".podDisruptionBudget", rc.PodDisruptionBudget)
	validateRouterAutoscaling(f, p+".autoscaling", rc.Autoscaling)
	validateIngress(f, p+".ingress", rc.Ingress)
	validateHTTPRoute(f, p+".httpRoute", rc.HTTPRoute)
}
