package resolve

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Engine is one model's engine, with the top-level engine blocks merged in
// and every default applied. Builders read only this.
type Engine struct {
	Path   string // spec path of the model's fields: "spec.model" or "spec.models[i]"
	Block  string // spec path of its engine blocks: "spec" or "spec.models[i]"
	Model  v1alpha1.Model
	Cfg    v1alpha1.EngineConfig // merged; every block non-nil
	ID     string                // the model name made a DNS label (M)
	Label  string                // value of the pod label "model"
	Served string                // the name clients use in the OpenAI API
	// Role is the group of a disaggregated model the engine serves
	// (RolePrefill, RoleDecode), "" for an ordinary engine.
	Role string
	// Version is VersionCanary for a model's canary engine (canary.go),
	// "" for the model's own.
	Version string
	// ModelID and ModelLabel are the model's id and label: a group's
	// differ from its own (M-prefill, M-decode), an engine's are its own.
	ModelID, ModelLabel string
	// Picked marks a disaggregated model's group behind llm-d's endpoint
	// picker, which schedules prefill and decode itself: its pods carry
	// the picker's role label, and a decode group's run the routing sidecar
	// in front of vLLM (pdBehindPicker).
	Picked bool
	// LWSWorker marks the worker pods' engine of a multi-node model, whose
	// arguments differ from its leader's (multiNodeArgs).
	LWSWorker bool
	// Names of the pod's model cache and chat template volumes, which the
	// chart derives from the stack's name: see names.ModelCacheVolume.
	CacheVolume, TemplatesVolume string
	// The vLLM release the engine runs; VLLMErr says why the version the
	// stack names cannot be used (validation reports it).
	VLLM    programVersion
	VLLMErr error
	// Layers are the blocks of the spec cfg is merged from, in order, where
	// the user wrote them: validation checks each (validateLayers) and
	// names the field where it was written (origin).
	Layers []Layer

	// Derived are the engine's facts, computed once by New (derive in
	// facts.go) from the fields above and the stack's routing; builders
	// and checks read them and compute none of them again.
	Derived
}

// Derived are the facts of an engine that builders and checks share.
type Derived struct {
	// MultiNode: the model spans nodes, PodsPerReplica pods per replica
	// (multiNode.podsPerReplica, at least 2; 0 for one pod); Ray: its
	// release has no multi-node flags of its own, so its group runs Ray.
	MultiNode      bool
	PodsPerReplica int32
	Ray            bool
	// TensorParallel is the number of GPU workers of one pod (at least 1).
	TensorParallel int32
	// LMCache: the engine runs LMCache (lmcacheConfig.enabled); KVAware:
	// it registers its LMCache workers, from WorkerPort, with the LMCache
	// controller in the router (routerType kvaware).
	LMCache, KVAware bool
	WorkerPort       int32
	// Transfer is how a disaggregated model's KV cache moves (nixl or
	// lmcache); RoutingSidecar: a decode group behind the picker runs the
	// routing sidecar in front of vLLM, which then listens on VLLMPort
	// (else the engine port).
	Transfer       string
	RoutingSidecar bool
	VLLMPort       int32
	// ScaleToZero is the model's scaleToZero block when enabled, else nil;
	// Autoscaled: an autoscaler (or KEDA, with ScaleToZero) owns replicas.
	ScaleToZero *v1alpha1.ScaleToZero
	Autoscaled  bool
	// SleepMode: extraArgs hold --enable-sleep-mode; V0Engine: vllmConfig.v1
	// is false.
	SleepMode, V0Engine bool
	// RuntimeAdapters: the engine runs the adapter sync container;
	// LoRASidecar: it runs the LoRA sidecar; Shm: its pod mounts /dev/shm.
	RuntimeAdapters, LoRASidecar, Shm bool
	// KVOffload: the engine offloads its KV cache through vLLM's own
	// OffloadingConnector (kvOffloading); KVOffloadFS is where its
	// filesystem tier lives (KVOffloadEmptyDir, KVOffloadNewClaim,
	// KVOffloadExistingClaim), "" without one.
	KVOffload   bool
	KVOffloadFS string
	// DataParallel is the data-parallel ranks of one replica
	// (vllmConfig.dataParallelSize, at least 1), DataParallelLocal those of
	// each of its pods; ExpertParallel: the model's experts are spread
	// (vllmConfig.expertParallel), EPLB the load balancer when it is on,
	// else nil (dataparallel.go).
	DataParallel, DataParallelLocal int32
	ExpertParallel                  bool
	EPLB                            *v1alpha1.EPLB
	// Drain is how the engine's pods stop (shutdown.go).
	Drain Drain
	// Prefetch: a Job fills the engine's claim before it starts, and the
	// engine reads it offline (storage.prefetch).
	Prefetch bool
	// PrecisePrefix: the engine publishes its KV events to its picker
	// (inferenceExtension.picker.prefixCache.mode Precise; precise.go).
	PrecisePrefix bool
}

// A layer is one block of the spec an engine's configuration is merged
// from: the top level, a models[] item, a disaggregation group. Every
// layer of every engine goes through the same checks (validateLayers), so
// a kind of engine made of a new block cannot escape them.
type Layer struct {
	Path string                // "spec", "spec.models[0]", "spec.disaggregation.decode"
	Cfg  v1alpha1.EngineConfig // what the block sets, as engine blocks
	// flat are the engine blocks whose fields the block holds directly: a
	// group's tensorParallelSize and extraArgs are vllmConfig's, its
	// nodeSelector and tolerations scheduling's.
	flat []string
	// canary: the layer is a model's canary block (canary.go), which holds
	// vllmConfig's image, engineVersion and extraArgs directly.
	canary bool
}

// IsGroup reports whether the layer is a disaggregation group's, the only
// blocks that hold engine blocks' fields directly.
func (l Layer) IsGroup() bool { return l.flat != nil && !l.canary }

// At is the path of a field of the engine blocks (such as
// "vllmConfig.extraArgs") where the layer's user writes it.
func (l Layer) At(field string) string {
	for _, b := range l.flat {
		if field == b {
			return l.Path
		}
		if rest, ok := strings.CutPrefix(field, b+"."); ok {
			return l.Path + "." + rest
		}
	}
	return l.Path + "." + field
}

// Sets reports whether the layer sets a field of the engine blocks, a
// dotted path of JSON names such as "resources.memory".
func (l Layer) Sets(field string) bool {
	v := reflect.ValueOf(l.Cfg)
	for _, name := range strings.Split(field, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		f, ok := jsonField(v, name)
		if !ok {
			return false
		}
		v = f
	}
	return !v.IsZero()
}

// jsonField is the field of struct v whose JSON name is name.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i), true
		}
		if t.Field(i).Anonymous {
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

// Origin is the path of the field as written where the engine's value of
// it comes from: the last layer that sets it, or the engine's own block
// (e.block) when no layer beyond it does, as messages on merged values
// always named it.
func (e Engine) Origin(field string) string {
	for i := len(e.Layers) - 1; i >= 0; i-- {
		l := e.Layers[i]
		if l.Path == e.Block {
			break
		}
		if l.Sets(field) {
			return l.At(field)
		}
	}
	return e.Block + "." + field
}

// Where is the block a message on a check across fields names: the last
// layer beyond the engine's own block that sets any of them, else the
// engine's block (e.block); name gives each field as the message writes it
// after that block: relative where the block sets it, else where it comes
// from (origin).
func (e Engine) Where(fields ...string) (block string, name func(field string) string) {
	for i := len(e.Layers) - 1; i >= 0; i-- {
		l := e.Layers[i]
		if l.Path == e.Block {
			break
		}
		for _, f := range fields {
			if l.Sets(f) {
				return l.Path, func(field string) string {
					if l.Sets(field) {
						return strings.TrimPrefix(strings.TrimPrefix(l.At(field), l.Path), ".")
					}
					return e.Origin(field)
				}
			}
		}
	}
	return e.Block, func(field string) string { return field }
}

// Router is the router's configuration with defaults applied.
type Router struct {
	RouterType string
	SessionKey string
	Image      string
	// The router release; VersionErr says why the version the stack names
	// cannot be used (validation reports it).
	Version    programVersion
	VersionErr error
	PullPolicy corev1.PullPolicy
	PullSecret string
	Replicas   int32
	Scheduling *v1alpha1.Scheduling
	PodAnnots  map[string]string
	// ServiceAccount is the user's ServiceAccount; "" runs the router as
	// the stack's own.
	ServiceAccount string
	ExtraVolumes   []corev1.Volume
	ExtraMounts    []corev1.VolumeMount
	// Routing knobs: PrefixMinMatch for prefixaware; the LMCache
	// controller's ports (set only for kvaware) and KVThreshold for kvaware.
	PrefixMinMatch *int32
	ControllerPort int32
	ReplyPort      int32
	HeartbeatPort  int32
	KVThreshold    *int32
	Resources      corev1.ResourceRequirements
	DiscoveryType  string // "" leaves the router's default (pod-ip)
	ExtraArgs      []string
	Env            []corev1.EnvVar
	APIKey         *v1alpha1.SecretKeySelector // also given to every engine
	ServiceType    corev1.ServiceType
	ServicePort    int32
	ServiceAnnots  map[string]string
	NodePort       *int32
	PDB            *v1alpha1.PodDisruptionBudget
	Autoscaling    *v1alpha1.RouterAutoscaling
	Ingress        *v1alpha1.Ingress
	HttpRoute      *v1alpha1.HTTPRoute
}

// GroupPath is where an engine's own settings are written: the group of a
// disaggregated model's, else its engine blocks.
func (e Engine) GroupPath() string {
	if e.Role == "" {
		return e.Block
	}
	for i := len(e.Layers) - 1; i >= 0; i-- {
		if p := e.Layers[i].Path; strings.HasSuffix(p, ".disaggregation."+e.Role) {
			return p
		}
	}
	return e.Block + ".disaggregation." + e.Role
}

// A disaggregated model behind llm-d's endpoint picker (issue 30): one
// InferencePool over both groups' pods, which carry the picker's role label
// (llm-d.ai/role: prefill or decode); the picker's configuration has a
// prefill and a decode profile and the profile handler that runs both for
// every request (inferencepool.ConfigPD); on each decode pod llm-d's
// routing sidecar listens on the engine port, which the pool targets, and
// vLLM behind it on inferencepool.DecodeEnginePort. The sidecar sends the
// request to the prefill endpoint the picker named, then to its vLLM with
// the prefill engine's kv_transfer_params, and the decode engine pulls the
// KV cache over NIXL from the prefill pod's side channel, as behind the
// router (facts: testdata/upstream/GAIE.md "P/D behind llm-d's picker",
// pd-sidecar-flags.tsv, epp-plugins.tsv, epp-plugin-parameters.tsv).

// sidecar is spec.inferenceExtension.routingSidecar with defaults applied.
type sidecar struct {
	Image      string
	PullPolicy corev1.PullPolicy
	Release    upstream.Version
	From       string // where the release comes from, for messages
	Err        error
}

// extension is spec.inferenceExtension with defaults applied.
type extension struct {
	Spec       *v1alpha1.InferenceExtension
	Image      string
	Release    upstream.PickerRelease
	ReleaseErr error
	From       string // where the release comes from, for messages
	Replicas   int32
	Weights    inferencepool.Weights
	// Sidecar is the routing sidecar of disaggregated models' decode pods.
	Sidecar sidecar
}

// Stack is a ProductionStack resolved for building: names,
// namespace, and every model's engine with defaults applied.
type Stack struct {
	Name      string // S: the stack's name as a DNS label, at most 63 characters
	Namespace string
	Names     names.Names
	Engines   []Engine
	Router    Router

	// Extension is the inference extension's routing layer, nil when the
	// stack runs the production-stack router.
	Extension *extension

	ServiceMonitor *v1alpha1.ServiceMonitor
	// AdapterSyncImage is the function's own image, from the Input, for
	// the adapter sync containers.
	AdapterSyncImage string
	NetworkPolicy    *v1alpha1.NetworkPolicy
	CacheServer      *v1alpha1.LMCacheServer

	ID   Identity
	Spec *v1alpha1.ProductionStackSpec
}

// Meta is the metadata of every object of the stack. The namespace is set
// explicitly: a legacy XR is cluster scoped, so Crossplane cannot infer it.
func (s *Stack) Meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: labels}
}

// HFTokenSecret is the Hugging Face token of the stack's first engine that
// has one, for the router: kvaware routing downloads the models' tokenizers.
func (s *Stack) HFTokenSecret() *v1alpha1.SecretKeySelector {
	for _, e := range s.Engines {
		if t := e.Cfg.VLLMConfig.HFTokenSecret; t != nil {
			return t
		}
	}
	return nil
}
