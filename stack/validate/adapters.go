package validate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// loraRankOneSince: --max-lora-rank 1 is accepted from vLLM 0.12.0
// (vllm-flags.tsv).
var loraRankOneSince = upstream.V(0, 12, 0)

// validateRuntimeAdapters checks a model's runtime adapters and the LoRA
// limits of its merged engine.
func validateRuntimeAdapters(f *Findings, s *resolve.Stack, e resolve.Engine) {
	m, p := e.Model, e.Path
	v := e.Cfg.VLLMConfig
	if e.Role != resolve.RoleDecode {
		if len(m.Adapters) > 0 && !m.EnableRuntimeAdapters {
			f.errorf("%s.adapters needs enableRuntimeAdapters: true: the adapter sync container loads them", p)
		}
		seen := map[string]bool{m.Name: true, e.Served: true}
		for _, a := range m.LoRAAdapters {
			seen[a.Name] = true
		}
		for i, a := range m.Adapters {
			ap := fmt.Sprintf("%s.adapters[%d]", p, i)
			switch {
			case !runtimeAdapterName.MatchString(a.Name) || len(a.Name) > 253:
				f.errorf("%s.name %s is invalid: use letters, digits, '_', '.', ':' and '-', starting with a letter, digit or '_', at most 253 characters (it is also a directory name)", ap, resolve.ClipQuote(a.Name))
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
					f.errorf("%s.huggingFace.repo %s is invalid: use <owner>/<name> or <name> of a Hugging Face repository (letters, digits, '-', '_', '.')", ap, resolve.ClipQuote(hf.Repo))
				}
				if hf.Revision != "" && (!ModelRevision.MatchString(hf.Revision) || len(hf.Revision) > 255 || strings.Contains(hf.Revision, "..")) {
					f.errorf("%s.huggingFace.revision %s is invalid: use a branch, tag or commit of the repository", ap, resolve.ClipQuote(hf.Revision))
				}
			default:
				if !strings.HasPrefix(a.Path, build.ModelCachePath+"/") || len(a.Path) > 4096 || strings.ContainsFunc(a.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }) || slices.Contains(strings.Split(a.Path, "/"), "..") {
					f.errorf("%s.path %s is invalid: use a directory on the model cache, an absolute path under %s/ without '..'", ap, resolve.ClipQuote(a.Path), build.ModelCachePath)
				}
			}
		}
	}
	if !e.RuntimeAdapters {
		return
	}
	switch {
	case !m.EnableLoRA:
		f.errorf("%s.enableRuntimeAdapters needs enableLoRA: true: vLLM loads adapters only with --enable-lora", p)
	case !resolve.Enabled(e.Cfg.Storage.Enabled):
		f.errorf("%s.enableRuntimeAdapters needs storage: the sync container and vLLM read adapters of a path source on the model cache; enable storage", e.Block)
	case s.AdapterSyncImage == "":
		f.errorf("%s.enableRuntimeAdapters needs the adapter sync image: the Composition's Input must set adapterSync.image to the function's own image (the sync container runs its binary as `function adapter-sync`)", p)
	}
	validateSyncIdentity(f, s, e)
	// The router re-reads an engine's /v1/models only on a watch event of
	// what it discovers: with service-name that is the Service, which the
	// sync container's lora-modified patch of the pod does not touch
	// (service_discovery.py at vllm-stack-0.1.12, lora-runtime.md).
	if !resolve.ExtensionOn(s) && s.Router.DiscoveryType == resolve.DiscoveryServiceName && e.Role != resolve.RoleDecode {
		f.warnf("%s.enableRuntimeAdapters with routerConfig.k8sServiceDiscoveryType service-name: the router reads a Service's models only on an event of the Service, and the sync container marks the pod (lora-modified), so the router answers 404 for a new adapter until the Service changes; use pod-ip", p)
	}
	if multi := e.MultiNode; multi {
		f.errorf("%s: enableRuntimeAdapters cannot be combined with multiNode yet: the sync container loads adapters into one pod's engine through its API server, and only a replica's leader pod runs one", e.Block)
	}
	if maxCPU := v.MaxCPULoras; maxCPU != nil && len(m.Adapters) > int(*maxCPU) && e.Role != resolve.RoleDecode {
		f.warnf("%s: %d adapters but vllmConfig.maxCpuLoras is %d: vLLM keeps at most that many loaded and evicts the least recently used", p, len(m.Adapters), *maxCPU)
	}
}

// validateSyncIdentity: the sync container's token is the stack's own
// ServiceAccount's, the one identity the admission policy confines, and it
// reaches no other container of the pod.
func validateSyncIdentity(f *Findings, s *resolve.Stack, e resolve.Engine) {
	p := e.Path + ".enableRuntimeAdapters"
	// Where the value is written: the top-level block of models[] too
	// (e.origin names an item's own block for it).
	at := func(field string) string {
		for _, l := range slices.Backward(e.Layers) {
			if l.Sets(field) {
				return l.At(field)
			}
		}
		return e.Block + "." + field
	}
	if sa := e.Cfg.Pod.ServiceAccountName; sa != "" {
		f.errorf("%s %q cannot be combined with %s: the engine pods run as the stack's ServiceAccount %q, the only identity the adapter sync RoleBinding grants and the admission policy %s confines to its own pod's annotations; remove serviceAccountName, or turn enableRuntimeAdapters off",
			at("pod.serviceAccountName"), sa, p, s.Names.AdapterSyncServiceAccount(), adaptersync.PolicyName)
	}
	if resolve.Enabled(e.Cfg.Pod.AutomountServiceAccountToken) {
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
func validateLoRALimits(f *Findings, e resolve.Engine) {
	v := e.Cfg.VLLMConfig
	if r := v.MaxLoraRank; r != nil {
		at, name := e.Where("vllmConfig.maxLoraRank")
		if !slices.Contains(loraRanks, *r) {
			f.errorf("%s: %s %d is not a rank vLLM takes: use one of 1, 8, 16, 32, 64, 128, 256, 320, 512", at, name("vllmConfig.maxLoraRank"), *r)
		} else if *r == 1 && e.VLLMErr == nil && !e.VLLM.Version.AtLeast(loraRankOneSince) {
			f.errorf("%s: %s 1 needs vLLM %s or later; the engine runs %s, which takes 8 and above", at, name("vllmConfig.maxLoraRank"), loraRankOneSince, e.VLLM)
		}
	}
	if c := v.MaxCPULoras; c != nil {
		at, name := e.Where("vllmConfig.maxCpuLoras", "vllmConfig.maxLoras")
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
	if (v.MaxLoraRank != nil || v.MaxCPULoras != nil) && !e.Model.EnableLoRA && e.Role != resolve.RoleDecode {
		f.warnf("%s: vllmConfig.maxLoraRank and maxCpuLoras have no effect because %s.enableLoRA is false", e.Block, e.Path)
	}
}

var loraRanks = []int32{1, 8, 16, 32, 64, 128, 256, 320, 512}

// routerNameOwner finds another model behind the router that lists name in
// its /v1/models (its served name, or one of its adapters): router 0.1.12
// picks the engines whose model_names contain the request's model
// (src/vllm_router/services/request_service/request.py:510 at
// vllm-stack-0.1.12, `requested_model in x.model_names`), so a name two models
// list is routed to either. Behind the inference extension each model has
// its own route and pool, so names do not meet.
func routerNameOwner(s *resolve.Stack, e resolve.Engine, name string) (what, other string) {
	if resolve.ExtensionOn(s) {
		return "", ""
	}
	for _, o := range s.Engines {
		if o.Path == e.Path || o.Role == resolve.RoleDecode {
			continue
		}
		if o.Served == name {
			return "the served name", o.Path
		}
		for _, a := range o.Model.LoRAAdapters {
			if a.Name == name {
				return "a LoRA adapter", o.Path
			}
		}
		for _, a := range o.Model.Adapters {
			if a.Name == name {
				return "a runtime adapter", o.Path
			}
		}
	}
	return "", ""
}
