package stack

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Composition resource names of the adapter sync objects: a ConfigMap per
// engine, the RBAC once per stack.
func engineAdaptersKey(model string) string { return "engine-" + model + "-adapters" }

const (
	adapterSyncServiceAccountKey = "adapter-sync-serviceaccount"
	adapterSyncRoleKey           = "adapter-sync-role"
	adapterSyncRoleBindingKey    = "adapter-sync-rolebinding"
)

func (n names) engineAdapters(model string) string {
	return shorten(n.stack+"-"+model+"-lora-adapters", maxSubdomainLength)
}

// adapterSyncServiceAccount always ends in adaptersync.ServiceAccountSuffix,
// which the admission policy selects the sync identity by: a stack's name
// is a DNS label (at most 63 characters), so the name is at most 76 and is
// never shortened.
func (n names) adapterSyncServiceAccount() string {
	return n.stack + adaptersync.ServiceAccountSuffix
}

func (n names) adapterSyncRole() string { return shorten(n.stack+"-adapter-sync", maxSubdomainLength) }

func (n names) adapterSyncRoleBinding() string {
	return shorten(n.stack+"-adapter-sync", maxSubdomainLength)
}

// runtimeAdaptersOn: the engine runs the adapter sync container.
func runtimeAdaptersOn(e engine) bool { return e.model.EnableRuntimeAdapters }

// runtimeAdaptersAny: some engine of the stack does.
func runtimeAdaptersAny(s *resolvedStack) bool {
	return slices.ContainsFunc(s.engines, runtimeAdaptersOn)
}

// adapterValues are the model's runtime adapters as the builder takes them,
// in the user's order.
func adapterValues(e engine) []adaptersync.Adapter {
	out := make([]adaptersync.Adapter, 0, len(e.model.Adapters))
	for _, a := range e.model.Adapters {
		v := adaptersync.Adapter{Name: a.Name, Path: a.Path}
		if hf := a.HuggingFace; hf != nil {
			v.Repo, v.Revision = hf.Repo, hf.Revision
		}
		out = append(out, v)
	}
	return out
}

// adaptersConfigMap is the engine's adapter list. Its content is never
// hashed into the pod template: the adapters change without a restart.
func adaptersConfigMap(s *resolvedStack, e engine) *corev1.ConfigMap {
	return adaptersync.ConfigMap(s.names.engineAdapters(e.id), s.namespace, engineLabels(s.name, e), adapterValues(e))
}

// runtimeAdaptersDir is where the sync container downloads Hugging Face
// adapters and vLLM reads them: the pod's adaptersync.DownloadVolume, outside
// the model cache, so the kubelet never creates a mount point on the cache
// (which a root-squashing NFS server would refuse).
const runtimeAdaptersDir = "/lora-adapters"

// withAdapterSync adds the sync container, its volumes and identity to an
// engine pod.
func withAdapterSync(s *resolvedStack, e engine, pod *corev1.PodSpec) {
	var env []corev1.EnvVar
	if t := e.cfg.VLLMConfig.HFTokenSecret; t != nil {
		env = append(env, secretEnv("HF_TOKEN", t))
	}
	if k := s.router.apiKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	c := adaptersync.Container{
		Image:       s.adapterSyncImage,
		EnginePort:  enginePort,
		CacheVolume: e.cacheVolume,
		CachePath:   modelCachePath,
		Dir:         runtimeAdaptersDir,
		Env:         env,
	}
	pod.Containers = append(pod.Containers, c.Spec())
	pod.Volumes = append(pod.Volumes, adaptersync.Volumes(s.names.engineAdapters(e.id))...)
	// Validation refuses pod.serviceAccountName and
	// automountServiceAccountToken: true with runtime adapters.
	pod.ServiceAccountName = s.names.adapterSyncServiceAccount()
	pod.AutomountServiceAccountToken = ptr.To(false)
}

// adapterSyncObjects are the stack's RBAC for the sync containers: its
// ServiceAccount, the Role, and the RoleBinding once the Role is observed
// (as the router's: see stackObjects).
func adapterSyncObjects(s *resolvedStack, o Observed) []Object {
	if !runtimeAdaptersAny(s) {
		return nil
	}
	labels := labels(s.name, ComponentEngine, "adapter-sync")
	sa := s.names.adapterSyncServiceAccount()
	objs := []Object{
		{adapterSyncServiceAccountKey, adaptersync.ServiceAccount(sa, s.namespace, labels)},
		{adapterSyncRoleKey, adaptersync.Role(s.names.adapterSyncRole(), s.namespace, labels)},
	}
	if o.Has(adapterSyncRoleKey) {
		objs = append(objs, Object{adapterSyncRoleBindingKey, adaptersync.RoleBinding(s.names.adapterSyncRoleBinding(), s.namespace, labels, s.names.adapterSyncRole(), sa)})
	}
	return objs
}

// RuntimeAdapters reports whether some model of the stack runs the adapter
// sync container, whose identity the admission policy
// adaptersync.PolicyName confines: the function requires it on the cluster.
func (s *Stack) RuntimeAdapters() bool { return runtimeAdaptersAny(s.r) }

// loraRankOneSince: --max-lora-rank 1 is accepted from vLLM 0.12.0
// (vllm-flags.tsv).
var loraRankOneSince = upstream.V(0, 12, 0)

// validateRuntimeAdapters checks a model's runtime adapters and the LoRA
// limits of its merged engine.
func validateRuntimeAdapters(f *Findings, s *resolvedStack, e engine) {
	m, p := e.model, e.path
	v := e.cfg.VLLMConfig
	if e.role != roleDecode {
		if len(m.Adapters) > 0 && !m.EnableRuntimeAdapters {
			f.errorf("%s.adapters needs enableRuntimeAdapters: true: the adapter sync container loads them", p)
		}
		seen := map[string]bool{m.Name: true, e.served: true}
		for _, a := range m.LoRAAdapters {
			seen[a.Name] = true
		}
		for i, a := range m.Adapters {
			ap := fmt.Sprintf("%s.adapters[%d]", p, i)
			switch {
			case !runtimeAdapterName.MatchString(a.Name) || len(a.Name) > 253:
				f.errorf("%s.name %s is invalid: use letters, digits, '_', '.', ':' and '-', starting with a letter, digit or '_', at most 253 characters (it is also a directory name)", ap, clipQuote(a.Name))
			case seen[a.Name]:
				f.errorf("%s.name %q is already the name of the model or another of its adapters: clients pick an adapter by its name, so names must be unique", ap, a.Name)
			default:
				if what, other := routerNameOwner(s, e, a.Name); other != "" {
					f.errorf("%s.name %q is also %s of %s: the router sends a request to any engine that lists its model name, so this adapter's requests could reach the other model; names must be unique across the stack's models: rename the adapter", ap, a.Name, what, other)
				}
			}
			seen[a.Name] = true
			switch {
			case (a.HuggingFace != nil) == (a.Path != ""):
				f.errorf("%s: give one source: huggingFace or path", ap)
			case a.HuggingFace != nil:
				hf := a.HuggingFace
				if !hubRepo.MatchString(hf.Repo) || len(hf.Repo) > 193 || slices.ContainsFunc(strings.Split(hf.Repo, "/"), func(p string) bool { return p == "." || p == ".." || len(p) > 96 }) {
					f.errorf("%s.huggingFace.repo %s is invalid: use <owner>/<name> or <name> of a Hugging Face repository (letters, digits, '-', '_', '.')", ap, clipQuote(hf.Repo))
				}
				if hf.Revision != "" && (!modelRevision.MatchString(hf.Revision) || len(hf.Revision) > 255 || strings.Contains(hf.Revision, "..")) {
					f.errorf("%s.huggingFace.revision %s is invalid: use a branch, tag or commit of the repository", ap, clipQuote(hf.Revision))
				}
			default:
				if !strings.HasPrefix(a.Path, modelCachePath+"/") || len(a.Path) > 4096 || strings.ContainsFunc(a.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }) || slices.Contains(strings.Split(a.Path, "/"), "..") {
					f.errorf("%s.path %s is invalid: use a directory on the model cache, an absolute path under %s/ without '..'", ap, clipQuote(a.Path), modelCachePath)
				}
			}
		}
	}
	if !runtimeAdaptersOn(e) {
		return
	}
	switch {
	case !m.EnableLoRA:
		f.errorf("%s.enableRuntimeAdapters needs enableLoRA: true: vLLM loads adapters only with --enable-lora", p)
	case !enabled(e.cfg.Storage.Enabled):
		f.errorf("%s.enableRuntimeAdapters needs storage: the sync container and vLLM read adapters of a path source on the model cache; enable storage", e.block)
	case s.adapterSyncImage == "":
		f.errorf("%s.enableRuntimeAdapters needs the adapter sync image: the Composition's Input must set adapterSync.image to the function's own image (the sync container runs its binary as `function adapter-sync`)", p)
	}
	validateSyncIdentity(f, s, e)
	// The router re-reads an engine's /v1/models only on a watch event of
	// what it discovers: with service-name that is the Service, which the
	// sync container's lora-modified patch of the pod does not touch
	// (service_discovery.py at vllm-stack-0.1.12, lora-runtime.md).
	if !extensionOn(s) && s.router.discoveryType == discoveryServiceName && e.role != roleDecode {
		f.warnf("%s.enableRuntimeAdapters with routerConfig.k8sServiceDiscoveryType service-name: the router reads a Service's models only on an event of the Service, and the sync container marks the pod (lora-modified), so the router answers 404 for a new adapter until the Service changes; use pod-ip", p)
	}
	if _, multi := multiNode(e); multi {
		f.errorf("%s: enableRuntimeAdapters cannot be combined with multiNode yet: the sync container loads adapters into one pod's engine through its API server, and only a replica's leader pod runs one", e.block)
	}
	if maxCPU := v.MaxCPULoras; maxCPU != nil && len(m.Adapters) > int(*maxCPU) && e.role != roleDecode {
		f.warnf("%s: %d adapters but vllmConfig.maxCpuLoras is %d: vLLM keeps at most that many loaded and evicts the least recently used", p, len(m.Adapters), *maxCPU)
	}
}

// routerNameOwner finds another model behind the router that lists name in
// its /v1/models (its served name, or one of its adapters): router 0.1.12
// picks the engines whose model_names contain the request's model
// (src/vllm_router/services/request_service/request.py:510 at
// vllm-stack-0.1.12, `requested_model in x.model_names`), so a name two models
// list is routed to either. Behind the inference extension each model has
// its own route and pool, so names do not meet.
func routerNameOwner(s *resolvedStack, e engine, name string) (what, other string) {
	if extensionOn(s) {
		return "", ""
	}
	for _, o := range s.engines {
		if o.path == e.path || o.role == roleDecode {
			continue
		}
		if o.served == name {
			return "the served name", o.path
		}
		for _, a := range o.model.LoRAAdapters {
			if a.Name == name {
				return "a LoRA adapter", o.path
			}
		}
		for _, a := range o.model.Adapters {
			if a.Name == name {
				return "a runtime adapter", o.path
			}
		}
	}
	return "", ""
}

// validateSyncIdentity: the sync container's token is the stack's own
// ServiceAccount's, the one identity the admission policy confines, and it
// reaches no other container of the pod.
func validateSyncIdentity(f *Findings, s *resolvedStack, e engine) {
	p := e.path + ".enableRuntimeAdapters"
	// Where the value is written: the top-level block of models[] too
	// (e.origin names an item's own block for it).
	at := func(field string) string {
		for _, l := range slices.Backward(e.layers) {
			if l.sets(field) {
				return l.at(field)
			}
		}
		return e.block + "." + field
	}
	if sa := e.cfg.Pod.ServiceAccountName; sa != "" {
		f.errorf("%s %q cannot be combined with %s: the engine pods run as the stack's ServiceAccount %q, the only identity the adapter sync RoleBinding grants and the admission policy %s confines to its own pod's annotations; remove serviceAccountName, or turn enableRuntimeAdapters off",
			at("pod.serviceAccountName"), sa, p, s.names.adapterSyncServiceAccount(), adaptersync.PolicyName)
	}
	if enabled(e.cfg.Pod.AutomountServiceAccountToken) {
		f.errorf("%s: true cannot be combined with %s: it would mount the adapter sync identity's token into every container of the engine pod (vLLM, sidecars, init containers), not only the sync container, which gets its own; remove automountServiceAccountToken",
			at("pod.automountServiceAccountToken"), p)
	}
}

// notSyncAccount refuses a ServiceAccount for another program named like
// the sync identity: the admission policy would deny its pod patches (the
// router labels sleeping engine pods).
func notSyncAccount(f *Findings, field, name string) {
	if strings.HasSuffix(name, adaptersync.ServiceAccountSuffix) {
		f.errorf("%s %q ends in %q, which the admission policy %s reserves for the adapter sync identity (it may change only its own pod's two annotations): choose another name", field, name, adaptersync.ServiceAccountSuffix, adaptersync.PolicyName)
	}
}

var (
	runtimeAdapterName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)
	hubRepo            = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$`)
)

// validateLoRALimits: --max-lora-rank and --max-cpu-loras against each other
// and the release.
func validateLoRALimits(f *Findings, e engine) {
	v := e.cfg.VLLMConfig
	if r := v.MaxLoraRank; r != nil {
		at, name := e.where("vllmConfig.maxLoraRank")
		if !slices.Contains(loraRanks, *r) {
			f.errorf("%s: %s %d is not a rank vLLM takes: use one of 1, 8, 16, 32, 64, 128, 256, 320, 512", at, name("vllmConfig.maxLoraRank"), *r)
		} else if *r == 1 && e.vllmErr == nil && !e.vllm.version.AtLeast(loraRankOneSince) {
			f.errorf("%s: %s 1 needs vLLM %s or later; the engine runs %s, which takes 8 and above", at, name("vllmConfig.maxLoraRank"), loraRankOneSince, e.vllm)
		}
	}
	if c := v.MaxCPULoras; c != nil {
		at, name := e.where("vllmConfig.maxCpuLoras", "vllmConfig.maxLoras")
		maxLoras := int32(1) // vLLM's default
		if v.MaxLoras != nil && *v.MaxLoras > 0 {
			maxLoras = *v.MaxLoras
		}
		switch {
		case *c < 1:
			f.errorf("%s: %s %d is invalid: must be at least 1", at, name("vllmConfig.maxCpuLoras"), *c)
		case *c < maxLoras:
			f.errorf("%s: %s %d is less than %s %d: vLLM requires max_cpu_loras >= max_loras; raise maxCpuLoras or lower maxLoras", at, name("vllmConfig.maxCpuLoras"), *c, name("vllmConfig.maxLoras"), maxLoras)
		}
	}
	if (v.MaxLoraRank != nil || v.MaxCPULoras != nil) && !e.model.EnableLoRA && e.role != roleDecode {
		f.warnf("%s: vllmConfig.maxLoraRank and maxCpuLoras have no effect because %s.enableLoRA is false", e.block, e.path)
	}
}

var loraRanks = []int32{1, 8, 16, 32, 64, 128, 256, 320, 512}

// loraLimitArgs renders the limits the engine's release takes.
func loraLimitArgs(e engine) []string {
	v := e.cfg.VLLMConfig
	var args []string
	if !e.model.EnableLoRA {
		return nil
	}
	if v.MaxLoraRank != nil {
		args = append(args, opt("--max-lora-rank", itoa(*v.MaxLoraRank)))
	}
	if v.MaxCPULoras != nil {
		args = append(args, opt("--max-cpu-loras", itoa(*v.MaxCPULoras)))
	}
	return args
}
