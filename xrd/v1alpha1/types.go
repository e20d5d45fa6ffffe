package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ProductionStack is a vLLM serving stack: one or more vLLM engines behind the
// vLLM production-stack router.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=crossplane;vllm
type ProductionStack struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProductionStackSpec   `json:"spec"`
	Status ProductionStackStatus `json:"status,omitempty"`
}

// ProductionStackSpec is the desired state of a stack. Set either model (one
// model) or models (several models behind one router). The engine blocks at
// this level (vllmConfig, lmcacheConfig, replicas, resources, env, storage,
// deploymentStrategy) are the defaults of every item of models; an item's
// fields override them field by field.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.model) && has(self.models))",message="set either spec.model or spec.models, not both"
// +kubebuilder:validation:XValidation:rule="has(self.model) || (has(self.models) && size(self.models) > 0)",message="set spec.model (one model) or spec.models (several models)"
type ProductionStackSpec struct {
	// Model served by the stack. Mutually exclusive with models.
	// +optional
	Model *Model `json:"model,omitempty"`

	// Models served behind one router, each with its own engine Deployment.
	// The engine blocks at the top level are defaults for every item.
	// Mutually exclusive with model.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Models []ModelEngine `json:"models,omitempty"`

	EngineConfig `json:",inline"`

	// Router configuration.
	// +optional
	RouterConfig *RouterConfig `json:"routerConfig,omitempty"`

	// Prometheus Operator ServiceMonitors for the engines and the router
	// (or the endpoint pickers), a Grafana dashboard and alerts.
	// +optional
	Monitoring *Monitoring `json:"monitoring,omitempty"`

	// A NetworkPolicy that lets only the router (and named scrape sources)
	// reach the engines.
	// +optional
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`

	// Route requests through the Gateway API Inference Extension (an
	// InferencePool and an endpoint picker per model, an HTTPRoute on your
	// Gateway) instead of the production-stack router.
	// +optional
	InferenceExtension *InferenceExtension `json:"inferenceExtension,omitempty"`
}

// Monitoring configures metrics scraping, the stack's Grafana dashboard
// and its alerts.
type Monitoring struct {
	// ServiceMonitors for the engines' and the router's /metrics (with the
	// inference extension, the endpoint pickers' instead of the router's).
	// +optional
	ServiceMonitor *ServiceMonitor `json:"serviceMonitor,omitempty"`

	// A Grafana dashboard of the stack, in a ConfigMap that Grafana's
	// dashboard sidecar loads: engines, router and endpoint pickers, built
	// from the metrics the releases the stack runs export. Needs
	// serviceMonitor: its queries select the series by the labels the
	// ServiceMonitors' scrape gives them.
	// +optional
	Dashboard *Dashboard `json:"dashboard,omitempty"`

	// Alerts in a Prometheus Operator PrometheusRule: no ready engine for a
	// model, waiting requests growing, KV cache nearly full, router without
	// engines, a picker's queue growing. Needs serviceMonitor, like dashboard, and the
	// PrometheusRule CRD.
	// +optional
	Alerts *Alerts `json:"alerts,omitempty"`
}

// Dashboard configures the stack's Grafana dashboard.
type Dashboard struct {
	// Create the dashboard's ConfigMap. Default: true when the block is
	// set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Labels the Grafana sidecar selects the ConfigMap by (its
	// sidecar.dashboards.label and labelValue). Default:
	// grafana_dashboard: "1", which the Grafana chart's default (label
	// grafana_dashboard, any value) and kube-prometheus-stack's value select;
	// set labels replace it.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations of the ConfigMap, e.g. the sidecar's folder annotation
	// (sidecar.dashboards.folderAnnotation, often grafana_folder) with the
	// folder the dashboard goes in.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Alerts configures the stack's PrometheusRule.
type Alerts struct {
	// Create the PrometheusRule. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Labels of the PrometheusRule, e.g. the one your Prometheus's
	// ruleSelector selects.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// How long a condition holds before its alert fires, a Prometheus
	// duration such as 5m. Default: 5m.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`
	For string `json:"for,omitempty"`

	// Waiting requests of one engine above which, while the model's queue
	// grows, VLLMRequestsWaitingGrowing fires; and requests an endpoint
	// picker holds for its pool, for VLLMPickerQueueGrowing. Default: 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	WaitingRequests *int32 `json:"waitingRequests,omitempty"`

	// KV-cache usage of one engine, in percent, above which
	// VLLMKVCacheNearlyFull fires. Default: 90.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	KVCacheUsagePercent *int32 `json:"kvCacheUsagePercent,omitempty"`
}

// ServiceMonitor configures the Prometheus Operator ServiceMonitors.
type ServiceMonitor struct {
	// Create the ServiceMonitors. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Scrape interval, a Prometheus duration: units y, w, d, h, m, s, ms in
	// that order, each at most once, e.g. 1m30s. Default: 30s.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`
	Interval string `json:"interval,omitempty"`

	// Labels of the ServiceMonitors, e.g. the release label your
	// Prometheus selects them by.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// NetworkPolicy restricts traffic to the engines.
type NetworkPolicy struct {
	// Create the NetworkPolicy. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// More sources allowed to reach the engines' port 8000, e.g. the
	// Prometheus pods that scrape them. The router is always allowed.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	AllowFrom []networkingv1.NetworkPolicyPeer `json:"allowFrom,omitempty"`
}

// ModelEngine is one model of a multi-model stack: the model's fields plus
// per-engine overrides of the top-level engine blocks.
type ModelEngine struct {
	Model        `json:",inline"`
	EngineConfig `json:",inline"`
}

// Model describes the model an engine serves.
//
// +kubebuilder:validation:XValidation:rule="(has(self.modelURL) && size(self.modelURL) > 0) || (has(self.path) && size(self.path) > 0)",message="set modelURL (a Hugging Face model ID or URL) or path (a local path to the model files)"
// +kubebuilder:validation:XValidation:rule="!has(self.enableTool) || !self.enableTool || (has(self.toolCallParser) && size(self.toolCallParser) > 0)",message="enableTool requires toolCallParser (for example hermes, llama3_json or mistral): vLLM refuses to start without it"
type Model struct {
	// Name of the model within the stack; objects are named after it (made a
	// DNS label) and engine pods carry it as the label "model".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Local path to the model files, absolute. Takes precedence over
	// modelURL as the model vLLM loads.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^(/[^\x00-\x1f\x7f]*)?$`
	Path string `json:"path,omitempty"`

	// Model to download and serve, e.g. a Hugging Face model ID such as
	// meta-llama/Llama-3.2-1B-Instruct, an absolute path, or a URL such as
	// s3://bucket/model.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?|/[^\x00-\x1f\x7f]*|[a-z][a-z0-9+.-]*://[^\x00-\x20\x7f]+)?$`
	ModelURL string `json:"modelURL,omitempty"`

	// Number of parameters of the model, e.g. 70B, 8x7B (a mixture of
	// experts) or 135M, for the startup budget and the sizing warning.
	// Unset: the size the model's name announces, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+x)?[0-9]+(\.[0-9]+)?[BbMm]$`
	ParameterCount string `json:"parameterCount,omitempty"`

	// The model's architecture, as its config.json says, for the sizing
	// warnings: whether tensorParallelSize divides the attention heads, and
	// whether one request of maxModelLen fits the KV cache the GPUs leave.
	// +optional
	Shape *ModelShape `json:"shape,omitempty"`

	// Revision of the model to download (--revision): a branch, tag or
	// commit of its Hugging Face repository. A commit hash pins the weights,
	// so every replica and every restart serves the same ones. Default: the
	// repository's default branch.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	Revision string `json:"revision,omitempty"`

	// Name clients use in the OpenAI API "model" field. Default: modelURL,
	// or name when only path is set.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_][A-Za-z0-9_.:/-]*)?$`
	ServedModelName string `json:"servedModelName,omitempty"`

	// Enable LoRA adapters (--enable-lora, runtime adapter updates allowed).
	// +optional
	EnableLoRA bool `json:"enableLoRA,omitempty"`

	// Enable automatic tool choice (--enable-auto-tool-choice). Requires
	// toolCallParser.
	// +optional
	EnableTool bool `json:"enableTool,omitempty"`

	// Tool call parser (--tool-call-parser), e.g. hermes, llama3_json, mistral.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_][A-Za-z0-9_.-]*)?$`
	ToolCallParser string `json:"toolCallParser,omitempty"`

	// Chat template text (Jinja). Stored in a ConfigMap and passed with
	// --chat-template.
	// +optional
	// +kubebuilder:validation:MaxLength=262144
	ChatTemplate string `json:"chatTemplate,omitempty"`

	// Allow the model's custom code to run (--trust-remote-code).
	// +optional
	TrustRemoteCode bool `json:"trustRemoteCode,omitempty"`

	// Data type of the weights and activations (--dtype).
	// +optional
	// +kubebuilder:validation:Enum="";auto;half;float16;bfloat16;float;float32
	DType string `json:"dtype,omitempty"`

	// Maximum number of sequences processed in parallel (--max-num-seqs).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxNumSeqs *int32 `json:"maxNumSeqs,omitempty"`

	// Maximum model context length in tokens (--max-model-len).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxModelLen *int32 `json:"maxModelLen,omitempty"`

	// LoRA adapters loaded at start-up (--lora-modules name=path).
	// Requires enableLoRA.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	LoRAAdapters []LoRAAdapter `json:"loraAdapters,omitempty"`

	// Load and unload adapters while the engines run: a sync container
	// beside vLLM (the function's own binary, image from the Composition's
	// Input adapterSync.image) reads the adapters from a ConfigMap, downloads
	// them onto the model cache and loads them through vLLM's runtime LoRA
	// endpoints (VLLM_ALLOW_RUNTIME_LORA_UPDATING). Changing adapters then
	// changes only the ConfigMap, never the engine pods. Requires enableLoRA
	// and storage; not with multiNode or an --api-server-count above 1.
	// +optional
	EnableRuntimeAdapters bool `json:"enableRuntimeAdapters,omitempty"`

	// Adapters loaded at run time by the sync container (see
	// enableRuntimeAdapters): adding, changing or removing one restarts
	// nothing. Their state is in status.models[].adapters.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	Adapters []RuntimeAdapter `json:"adapters,omitempty"`

	// Named priorities of the model's requests, with inferenceExtension:
	// each becomes an InferenceObjective of the model's pool, named
	// <stack>-<model>-<name>, and a request whose objective header
	// (x-gateway-inference-objective; x-llm-d-inference-objective from
	// llm-d's picker v0.9.0) carries that name gets its priority. A request
	// without the header, or naming no objective of the pool, has priority
	// 0. status.models[].inferenceObjectives lists the header each sends.
	// Needs the InferenceObjective CRD of the picker's release.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	InferenceObjectives []InferenceObjective `json:"inferenceObjectives,omitempty"`

	// A second version of the model beside it, with a share of its
	// requests; promote or remove it with one field (docs/canary.md).
	// +optional
	Canary *Canary `json:"canary,omitempty"`
}

// InferenceObjective is a named priority of a model's requests.
type InferenceObjective struct {
	// Name of the objective, a DNS label: the object's name, which clients
	// send in the header, is <stack>-<model>-<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Priority of the requests that name the objective, against the
	// model's other requests: a negative one is sheddable, refused (429)
	// while the model's engines are saturated; with the picker's flow
	// control (a model that scales to zero) every request is queued, in a
	// band per priority, and higher bands are served first. An int32 (the pickers' type), held as an
	// int64 so that a value beyond it is refused with its range.
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Priority int64 `json:"priority"`
}

// RuntimeAdapter is a LoRA adapter loaded while the engines run, from one
// source: a Hugging Face repository or a directory on the model cache.
// +kubebuilder:validation:XValidation:rule="has(self.huggingFace) != has(self.path)",message="give one source: huggingFace or path"
type RuntimeAdapter struct {
	// Model name clients use for the adapter; also the directory it is
	// downloaded to under /lora-adapters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`
	Name string `json:"name"`

	// A Hugging Face repository, downloaded with the model's
	// vllmConfig.hfTokenSecret.
	// +optional
	HuggingFace *AdapterHuggingFace `json:"huggingFace,omitempty"`

	// A directory on the model cache holding the adapter's files (absolute,
	// under /data), loaded in place.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/data/[^\x00-\x1f\x7f]+$`
	Path string `json:"path,omitempty"`
}

// AdapterHuggingFace is an adapter's Hugging Face repository.
type AdapterHuggingFace struct {
	// Repository: <owner>/<name> or <name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=193
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$`
	Repo string `json:"repo"`

	// Branch, tag or commit. Default: main.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/-]*$`
	Revision string `json:"revision,omitempty"`
}

// LoRAAdapter is a LoRA adapter served under its own model name.
type LoRAAdapter struct {
	// Model name clients use for the adapter.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_][A-Za-z0-9_.:/-]*)?$`
	Name string `json:"name"`

	// Local path (absolute) or Hugging Face ID of the adapter.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?|/[^\x00-\x1f\x7f]*)?$`
	Path string `json:"path"`
}

// EngineConfig holds the engine blocks shared by the top level (defaults) and
// the items of models (overrides).
type EngineConfig struct {
	// How engine pods are replaced on a change: RollingUpdate (a new pod
	// becomes ready before an old one stops; maxSurge 1, maxUnavailable 0) or
	// Recreate (old pods stop first; for a single GPU). Default: RollingUpdate.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;Recreate
	DeploymentStrategy string `json:"deploymentStrategy,omitempty"`

	// vLLM engine configuration.
	// +optional
	VLLMConfig *VLLMConfig `json:"vllmConfig,omitempty"`

	// LMCache KV-cache offloading configuration.
	// +optional
	LMCacheConfig *LMCacheConfig `json:"lmcacheConfig,omitempty"`

	// vLLM's native KV cache offloading: a CPU tier and a filesystem tier.
	// +optional
	KVOffloading *KVOffloading `json:"kvOffloading,omitempty"`

	// Number of engine replicas per model. 0 keeps the stack but scales the
	// engines down. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of each engine replica.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Environment variables of the engine container. An entry with the name
	// of a variable the function computes replaces it.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Sources of environment variables of the engine container: every key
	// of a Secret or ConfigMap, e.g. object storage credentials for an init
	// container's download. Variables in env take precedence.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Model cache volume, mounted at /data (HF_HOME), so weights are
	// downloaded once and survive restarts.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// Where engine pods may run: node selection, tolerations, affinity,
	// runtime class, priority and scheduler.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`

	// Engine pod settings: annotations, extra labels, security contexts,
	// identity and init containers.
	// +optional
	Pod *PodConfig `json:"pod,omitempty"`

	// The model's engine Service.
	// +optional
	Service *EngineService `json:"service,omitempty"`

	// Overrides of the engine's startup, readiness and liveness probes.
	// +optional
	Probes *Probes `json:"probes,omitempty"`

	// Rolling update bounds for deploymentStrategy RollingUpdate. Default:
	// maxSurge 1, maxUnavailable 0.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`

	// A PodDisruptionBudget for each model's engines, so node drains keep
	// enough replicas serving.
	// +optional
	PodDisruptionBudget *PodDisruptionBudget `json:"podDisruptionBudget,omitempty"`

	// How engine pods stop: the routing layer drops them, then requests in
	// flight finish (drain). Default: a 5 s routing delay, 30 s drain.
	// +optional
	Shutdown *Shutdown `json:"shutdown,omitempty"`

	// Scale each model's engines with load. When enabled the stack no
	// longer sets the Deployment's replicas: the autoscaler owns them.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Scale the model to zero engines after it has been idle, and back
	// when a request comes, with a KEDA ScaledObject (needs KEDA and a
	// Prometheus that scrapes the engines, and with inferenceExtension the
	// endpoint pickers' metrics port). With inferenceExtension the model's
	// endpoint picker holds the requests that come while no engine is
	// ready (its flow control) for up to coldStartSeconds; with the
	// production-stack router they get 503 until an engine is ready.
	// Instead of autoscaling; not with multiNode or disaggregation.
	// +optional
	ScaleToZero *ScaleToZero `json:"scaleToZero,omitempty"`

	// The LoRA adapter download sidecar, run next to vllm when
	// model.enableLoRA and storage are on. It downloads adapters into
	// /data/lora-adapters for runtime loading.
	// +optional
	LoRASidecar *LoRASidecar `json:"loraSidecar,omitempty"`

	// Serve the model disaggregated: a prefill group of engines computes
	// each prompt's KV cache and hands it to a decode group, which
	// generates the tokens; the router sends every request to both (with
	// inferenceExtension, llm-d's endpoint picker v0.7.0 or later and its
	// routing sidecar on the decode pods do). Each group is a Deployment
	// with its own replicas, resources, tensor parallelism and nodes; the
	// rest of the model's settings are shared. A stack serves one
	// disaggregated model: the router's routing logic applies to every
	// model, and the model's InferencePool selects both groups.
	// +optional
	Disaggregation *Disaggregation `json:"disaggregation,omitempty"`

	// Serve each replica of the model from several pods, on several
	// nodes: a LeaderWorkerSet instead of a Deployment, whose groups of
	// podsPerReplica pods run one engine: with vLLM's own multi-node
	// backend from vLLM 0.12.0, with Ray (vllm/vllm-openai images) before.
	// resources.gpu is per pod, and
	// resources.gpu × podsPerReplica must equal
	// vllmConfig.tensorParallelSize × vllmConfig.pipelineParallelSize.
	// Needs the LeaderWorkerSet CRD and controller (kubernetes-sigs/lws).
	// +optional
	MultiNode *MultiNode `json:"multiNode,omitempty"`
}

// ModelShape is the architecture of a model, named as its config.json
// names it (num_hidden_layers, num_attention_heads, num_key_value_heads,
// head_dim).
type ModelShape struct {
	// Transformer layers (num_hidden_layers).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	NumHiddenLayers *int32 `json:"numHiddenLayers,omitempty"`

	// Attention heads (num_attention_heads).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	NumAttentionHeads *int32 `json:"numAttentionHeads,omitempty"`

	// Key/value heads (num_key_value_heads). Default: numAttentionHeads.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	NumKeyValueHeads *int32 `json:"numKeyValueHeads,omitempty"`

	// Dimension of one head (head_dim, else hidden_size / num_attention_heads).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	HeadDim *int32 `json:"headDim,omitempty"`
}

// MultiNode spreads each replica of a model over a group of pods.
type MultiNode struct {
	// Pods per replica (the LeaderWorkerSet's group size): the leader,
	// which serves the API, and podsPerReplica-1 workers.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=64
	PodsPerReplica int32 `json:"podsPerReplica"`
}

// Disaggregation splits a model's engines into a prefill and a decode group.
type Disaggregation struct {
	// Disaggregate the model. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// How the KV cache goes from a prefill engine to a decode engine.
	// nixl: vLLM's NixlConnector; the decode engine pulls the blocks from
	// the prefill pod over NIXL, behind the router's
	// disaggregated_prefill_orchestrated logic, which spreads requests over
	// every engine of both groups, or behind llm-d's endpoint picker and
	// routing sidecar. Needs vLLM 0.10.2 or later (the first
	// vllm/vllm-openai image with NIXL) and router 0.1.11 or later.
	// lmcache: the chart's recipe, LMCache's NIXL backend of mid-2025; the
	// prefill engine pushes the KV cache to the decode group's Service,
	// behind the router's disaggregated_prefill logic, which uses one
	// engine of each group. Needs an lmcache/vllm-openai image tagged with
	// a build date from 2025-05-27 to 2025-09-11 (later LMCache reads other
	// keys and waits for a request field no router sends), one decode
	// engine, tensorParallelSize 1 and router 0.1.4 or later; not with
	// inferenceExtension (the routing sidecar has no LMCache transfer).
	// Both need pod-ip discovery. Default: nixl.
	// +optional
	// +kubebuilder:validation:Enum="";nixl;lmcache
	Transfer string `json:"transfer,omitempty"`

	// UCX transports NIXL may use (UCX_TLS of both groups' engines), e.g.
	// cuda_ipc,cuda_copy,tcp. Unset leaves UCX's default.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_,^]*$`
	UCXTLS string `json:"ucxTLS,omitempty"`

	// Run both groups' pods in the node's PID and IPC namespaces (hostPID
	// and hostIPC), as the chart's recipe does. UCX's cuda_ipc transport
	// needs it to move the KV cache between pods on one node: CUDA IPC
	// handles do not cross PID namespaces, and without it UCX falls back,
	// silently, to the next transport of ucxTLS. Privileged: the Pod
	// Security baseline level refuses host namespaces. Default: false.
	// +optional
	HostPIDAndIPC *bool `json:"hostPIDAndIPC,omitempty"`

	// The prefill group's engines.
	// +optional
	Prefill *DisaggregationGroup `json:"prefill,omitempty"`

	// The decode group's engines.
	// +optional
	Decode *DisaggregationGroup `json:"decode,omitempty"`
}

// DisaggregationGroup is what a group of a disaggregated model sets apart
// from the model's engine settings.
type DisaggregationGroup struct {
	// Number of engine replicas of the group. Default: the model's replicas.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Scale the group's engines on its own signal, apart from the other
	// group's (a ScaledObject or HorizontalPodAutoscaler per group, named
	// after it). With type keda the signal is engineWaiting, the waiting
	// requests of the group's engines, selected by the group's Service
	// (needs monitoring.serviceMonitor); pickerRunning counts a model's
	// requests, not a group's, and is refused here. Instead of replicas;
	// not with the model's autoscaling or scaleToZero.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Resources of each engine of the group, replacing the model's fields
	// the group sets.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Number of GPUs each engine of the group splits the model across
	// (--tensor-parallel-size). Default: the model's.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TensorParallelSize *int32 `json:"tensorParallelSize,omitempty"`

	// Node labels a node must have to run the group's pods, replacing the
	// model's scheduling.nodeSelector, e.g. to put prefill and decode on
	// different GPU pools.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Taints the group's pods tolerate, replacing the model's
	// scheduling.tolerations.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Extra arguments of the group's engines, after the model's
	// vllmConfig.extraArgs.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// LoRASidecar configures the adapter download sidecar.
type LoRASidecar struct {
	// Run the sidecar. Default: true with model.enableLoRA and storage.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Sidecar image. Default: lmcache/lmstack-sidecar:latest.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// Sidecar resources. Default: requests cpu 500m, memory 128Mi.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// ScaleToZero scales a model to zero engines when idle and wakes it on
// request.
type ScaleToZero struct {
	// Scale to zero. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Seconds without a request after which the model goes to zero (KEDA's
	// cooldownPeriod). Default: 600.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleSeconds *int32 `json:"idleSeconds,omitempty"`

	// Most replicas, scaled out on the engines' waiting requests. Required
	// when enabled.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Seconds a request may wait for the model to start from zero: the
	// endpoint picker's request TTL, and at most the HTTPRoute's request
	// timeout. Default: the engine's start-up budget (its startup probe's,
	// by the model's size); a value below that budget is refused, since a
	// cold start may take as long.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ColdStartSeconds *int32 `json:"coldStartSeconds,omitempty"`

	// Waiting requests per replica that scale out (vLLM's
	// vllm:num_requests_waiting, and with inferenceExtension the requests
	// the picker holds), a plain number such as 5 or 2.5 (KEDA reads a JSON
	// number, not a quantity). Default: 5.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?$`
	Threshold string `json:"threshold,omitempty"`

	// Prometheus server that scrapes the engines and, with
	// inferenceExtension, the endpoint pickers (or, with the router, the
	// router), e.g. http://prometheus-operated.monitoring:9090. Required
	// when enabled.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#]+(/[^?#]*)?$`
	PrometheusAddress string `json:"prometheusAddress,omitempty"`

	// Seconds between KEDA's checks. Default: 15.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PollingInterval *int32 `json:"pollingInterval,omitempty"`
}

// Autoscaling scales a model's engines: with KEDA on vLLM's queue length
// (vllm:num_requests_waiting, read from Prometheus), or with a plain
// HorizontalPodAutoscaler on CPU.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type Autoscaling struct {
	// Scale the engines. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Autoscaler: keda (a KEDA ScaledObject on the request queue; needs KEDA
	// and Prometheus) or hpa (a HorizontalPodAutoscaler on CPU). Default:
	// keda.
	// +optional
	// +kubebuilder:validation:Enum=keda;hpa
	Type string `json:"type,omitempty"`

	// Fewest replicas. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// Most replicas. Required when autoscaling is enabled.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// keda: waiting requests per replica that trigger a scale-up, a plain
	// number such as 5 or 2.5 (KEDA reads a JSON number, not a quantity). Default: 5.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?$`
	Threshold string `json:"threshold,omitempty"`

	// keda: Prometheus server that scrapes the engines, e.g.
	// http://prometheus-operated.monitoring:9090. Required with keda.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#]+(/[^?#]*)?$`
	PrometheusAddress string `json:"prometheusAddress,omitempty"`

	// keda: PromQL query whose value is compared with threshold. Default:
	// sum(vllm:num_requests_waiting{model_name="<servedModelName>",namespace="<namespace>"}).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query,omitempty"`

	// keda: what the engines scale on, rendered for the release that
	// exports it: engineWaiting, vLLM's waiting requests of the model's
	// engines (vllm:num_requests_waiting; threshold default 5), or, with
	// inferenceExtension, pickerRunning, the requests the model's endpoint
	// picker has in flight (inference_objective_running_requests;
	// llm_d_epp_request_running from llm-d v0.9.0; threshold default 16,
	// llm-d's autoscaling guide), or poolSaturation, the saturation of
	// the model's pool as the picker's flow control computes it
	// (inference_extension_flow_control_pool_saturation;
	// llm_d_epp_flow_control_pool_saturation from llm-d v0.9.0; GAIE v1.5.0
	// and llm-d v0.8.0 on; turns the picker's flow control on; threshold
	// default 0.7, the pool's average, KEDA's Value metric). Both need
	// monitoring.serviceMonitor. Not with query. Default: engineWaiting.
	// +optional
	// +kubebuilder:validation:Enum=engineWaiting;pickerRunning;poolSaturation
	Signal string `json:"signal,omitempty"`

	// keda: several signals or queries, each with its own threshold; KEDA
	// scales to the most replicas any of them asks for. Not with signal,
	// query or threshold.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Triggers []ScalingTrigger `json:"triggers,omitempty"`

	// keda: seconds between checks. Default: 15.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PollingInterval *int32 `json:"pollingInterval,omitempty"`

	// keda: seconds after the last activity before scaling to idleReplicas.
	// Default: 360.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`

	// keda: replicas when there is no traffic at all, e.g. 0 to free the
	// GPUs; must be below minReplicas.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleReplicas *int32 `json:"idleReplicas,omitempty"`

	// keda: replicas to run while Prometheus cannot be queried.
	// +optional
	Fallback *AutoscalingFallback `json:"fallback,omitempty"`

	// keda: seconds after the ScaledObject is made before KEDA may scale
	// the engines in while its triggers were never active (KEDA's
	// initialCooldownPeriod; KEDA's default 0: at once).
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`

	// How fast the replicas move up and down: the HorizontalPodAutoscaler's
	// behavior (with keda, passed to the one KEDA makes).
	// +optional
	Behavior *ScalingBehavior `json:"behavior,omitempty"`

	// hpa: target average CPU utilization in percent. Default: 80.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// AutoscalingFallback is what KEDA does when its metric cannot be read.
type AutoscalingFallback struct {
	// Failed checks before falling back.
	// +kubebuilder:validation:Minimum=1
	FailureThreshold int32 `json:"failureThreshold"`

	// Replicas while falling back.
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas"`

	// Which replicas KEDA falls back to: static (replicas; KEDA's
	// default), currentReplicas, currentReplicasIfHigher (the larger of the
	// current replicas and replicas) or currentReplicasIfLower (the
	// smaller).
	// +optional
	// +kubebuilder:validation:Enum=static;currentReplicas;currentReplicasIfHigher;currentReplicasIfLower
	Behavior string `json:"behavior,omitempty"`
}

// RouterAutoscaling scales the router with a HorizontalPodAutoscaler on CPU.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type RouterAutoscaling struct {
	// Scale the router. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Fewest replicas. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// Most replicas. Required when autoscaling is enabled.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Target average CPU utilization in percent. Default: 80.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// Scheduling places engine pods on nodes.
type Scheduling struct {
	// Node labels a node must have to run the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Taints the pods tolerate, e.g. nvidia.com/gpu:NoSchedule.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Node and pod affinity and anti-affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// RuntimeClass of the pods, e.g. nvidia.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RuntimeClassName string `json:"runtimeClassName,omitempty"`

	// PriorityClass of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Scheduler of the pods; unset uses the cluster's default scheduler.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SchedulerName string `json:"schedulerName,omitempty"`
}

// PodConfig holds engine pod settings.
type PodConfig struct {
	// Annotations of the pods (not of the Deployment).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Extra labels of the pods. They are never part of a selector, and may
	// not replace the labels the stack sets.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Pod-level security context.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// Security context of the vllm container.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// ServiceAccount the engine pods run as; unset uses the namespace's
	// default ServiceAccount.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Mount a Kubernetes API token into the pods. Default: false (vLLM does
	// not call the API).
	// +optional
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`

	// Containers run to completion before vllm starts, e.g. to fetch weights
	// from object storage into /data.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=array
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
}

// EngineService configures a model's engine Service (ClusterIP, port 80 to
// the engines' 8000).
type EngineService struct {
	// Annotations of the Service, e.g. for a service mesh or service
	// discovery.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Probes overrides the engine's probes field by field: a field set here
// replaces the default's (GET /health on 8000; startup every 10 s with 60
// failures allowed, readiness every 5 s, liveness every 10 s, 3 failures).
type Probes struct {
	// Startup probe: how long a model may take to download and load.
	// +optional
	Startup *Probe `json:"startup,omitempty"`

	// Readiness probe: when the router may send traffic.
	// +optional
	Readiness *Probe `json:"readiness,omitempty"`

	// Liveness probe: when a hung engine is restarted.
	// +optional
	Liveness *Probe `json:"liveness,omitempty"`
}

// Probe is the tunable part of a probe; the check itself stays GET /health.
type Probe struct {
	// Seconds after the container starts before the first probe.
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`

	// Seconds between probes.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PeriodSeconds *int32 `json:"periodSeconds,omitempty"`

	// Seconds after which a probe times out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// Consecutive failures after which the probe fails.
	// +optional
	// +kubebuilder:validation:Minimum=1
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
}

// RollingUpdate bounds a rolling update.
type RollingUpdate struct {
	// Pods created above the desired replicas during an update: a number or
	// a percentage. Each surge pod needs its own GPUs.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Pods that may be unavailable during an update: a number or a
	// percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// PodDisruptionBudget limits voluntary disruptions (node drains). Set
// minAvailable or maxUnavailable.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.minAvailable) && has(self.maxUnavailable))",message="set minAvailable or maxUnavailable, not both"
type PodDisruptionBudget struct {
	// Create the PodDisruptionBudget. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Pods that must stay available: a number or a percentage.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// Pods that may be unavailable: a number or a percentage. Default: 1
	// when neither is set.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// VLLMConfig configures the vLLM engine container.
type VLLMConfig struct {
	// Engine image, with or without a registry host. Default:
	// vllm/vllm-openai:latest (or the Composition's Input).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// Registry prepended to image when image names no registry host.
	// Default: docker.io.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ImagePullRegistry string `json:"imagePullRegistry,omitempty"`

	// Image pull policy of the engine container.
	// +optional
	// +kubebuilder:validation:Enum="";Always;IfNotPresent;Never
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// Name of a Secret of type kubernetes.io/dockerconfigjson used to pull
	// the image.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ImagePullSecretName string `json:"imagePullSecretName,omitempty"`

	// Secret holding a Hugging Face token, passed as HF_TOKEN through a
	// secretKeyRef (never as a literal value).
	// +optional
	HFTokenSecret *SecretKeySelector `json:"hfTokenSecret,omitempty"`

	// Enable (true) or disable (false) chunked prefill; unset leaves vLLM's
	// default.
	// +optional
	EnableChunkedPrefill *bool `json:"enableChunkedPrefill,omitempty"`

	// Enable (true) or disable (false) prefix caching; unset leaves vLLM's
	// default.
	// +optional
	EnablePrefixCaching *bool `json:"enablePrefixCaching,omitempty"`

	// Number of GPUs the model is split across (--tensor-parallel-size).
	// Within one pod it must not exceed resources.gpu (see multiNode).
	// Above 1, /dev/shm is mounted.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TensorParallelSize *int32 `json:"tensorParallelSize,omitempty"`

	// Number of pipeline stages the model's layers are split into
	// (--pipeline-parallel-size), each on tensorParallelSize GPUs. Within
	// one pod tensorParallelSize × pipelineParallelSize must not exceed
	// resources.gpu; with multiNode it is usually the number of pods per
	// replica.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PipelineParallelSize *int32 `json:"pipelineParallelSize,omitempty"`

	// Data-parallel ranks of one replica (--data-parallel-size): each rank
	// is a copy of the engine on tensorParallelSize × pipelineParallelSize
	// GPUs, and the replica's API server spreads requests over them. With
	// multiNode the ranks are spread evenly over the replica's pods (vLLM
	// 0.12.0 or later): resources.gpu × podsPerReplica must equal
	// dataParallelSize × tensorParallelSize × pipelineParallelSize; on one
	// pod resources.gpu must. Above 1, /dev/shm is mounted.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	DataParallelSize *int32 `json:"dataParallelSize,omitempty"`

	// Data-parallel ranks on each pod (--data-parallel-size-local). Default:
	// dataParallelSize / multiNode.podsPerReplica (dataParallelSize on one
	// pod); set, it must equal that.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	DataParallelSizeLocal *int32 `json:"dataParallelSizeLocal,omitempty"`

	// Spread a mixture-of-experts model's experts over the GPUs of the
	// data-parallel and tensor-parallel ranks (expert parallelism).
	// +optional
	ExpertParallel *ExpertParallel `json:"expertParallel,omitempty"`

	// Fraction of GPU memory vLLM may use, as a string: 0 < x <= 1, e.g. "0.9".
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^([01](\.[0-9]+)?|\.[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([01]([.][0-9]+)?|[.][0-9]+)$') || (double(self) > 0.0 && double(self) <= 1.0)",message="gpuMemoryUtilization must be a number greater than 0 and at most 1, e.g. \"0.9\""
	GPUMemoryUtilization string `json:"gpuMemoryUtilization,omitempty"`

	// Maximum number of LoRA adapters in a batch (--max-loras); 0 leaves
	// vLLM's default. Takes effect with model.enableLoRA.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxLoras *int32 `json:"maxLoras,omitempty"`

	// Highest rank of a LoRA adapter the engine loads (--max-lora-rank):
	// 8, 16, 32, 64, 128, 256, 320 or 512, and 1 from vLLM 0.12.0. Unset
	// leaves vLLM's default, 16. Takes effect with model.enableLoRA.
	// +optional
	// +kubebuilder:validation:Enum=1;8;16;32;64;128;256;320;512
	MaxLoraRank *int32 `json:"maxLoraRank,omitempty"`

	// LoRA adapters kept in CPU memory (--max-cpu-loras), at least maxLoras.
	// Unset leaves vLLM's default, maxLoras. Takes effect with
	// model.enableLoRA.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxCPULoras *int32 `json:"maxCpuLoras,omitempty"`

	// Extra arguments appended verbatim to vllm serve, last.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	ExtraArgs []string `json:"extraArgs,omitempty"`

	// Use vLLM's V1 engine (VLLM_USE_V1=1) or the V0 engine (false); unset
	// leaves vLLM's default. The V0 engine exists up to vLLM 0.10.2; from
	// 0.11.1 vLLM no longer reads VLLM_USE_V1 and v1 has no effect.
	// +optional
	V1 *bool `json:"v1,omitempty"`

	// The vLLM release the image runs, e.g. 0.9.2, when its tag does not say
	// (latest, a digest, lmcache/vllm-openai or a custom image). Arguments
	// are spelled as that release parses them, and what it cannot do is
	// refused. A vllm/vllm-openai image tagged with a release needs none;
	// if both are set they must agree. Default: the Composition's Input
	// engine.version, else the newest release the function knows.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$`
	EngineVersion string `json:"engineVersion,omitempty"`
}

// SecretKeySelector names a key of a Secret in the stack's namespace.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key within the Secret. Default: token.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// LMCacheConfig configures LMCache KV-cache offloading in the engines.
type LMCacheConfig struct {
	// Enable LMCache. When false nothing LMCache-related is rendered.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// CPU offloading buffer: a quantity such as 4Gi or a plain number of GiB.
	// The engine's memory request must exceed it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CPUOffloadingBufferSize string `json:"cpuOffloadingBufferSize,omitempty"`

	// Disk offloading buffer: a quantity such as 8Gi or a plain number of GiB.
	// Stored under /data/lmcache on the model volume (or an emptyDir of this
	// size when storage is disabled).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DiskOffloadingBufferSize string `json:"diskOffloadingBufferSize,omitempty"`

	// Remote cache server URL, e.g. lm://cache-server:80.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	RemoteURL string `json:"remoteUrl,omitempty"`

	// Serializer for the remote cache.
	// +optional
	// +kubebuilder:validation:Enum="";naive;cachegen
	RemoteSerde string `json:"remoteSerde,omitempty"`

	// Port of the engine's LMCache worker, which the LMCache controller in
	// the router calls back with routerType kvaware. Default: 8001; with
	// tensor parallelism, worker i listens on workerPort+i.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	WorkerPort *int32 `json:"workerPort,omitempty"`

	// Seconds between the heartbeats the engine's LMCache worker sends the
	// LMCache controller with routerType kvaware; the controller drops a
	// worker it has not heard from in 30 seconds. Default: 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=29
	WorkerHeartbeatTime *int32 `json:"workerHeartbeatTime,omitempty"`

	// An LMCache cache server shared by the stack's engines. Engines with
	// LMCache enabled and no remoteUrl use it. Stack-wide: set it at the
	// top level only.
	// +optional
	Server *LMCacheServer `json:"server,omitempty"`
}

// LMCacheServer is the stack's LMCache cache server.
type LMCacheServer struct {
	// Run the cache server. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Image with tag. Default: lmcache/vllm-openai:latest.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// Replicas. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of the cache server; its memory holds the cache.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Serializer engines use with this server, unless they set remoteSerde.
	// Default: naive.
	// +optional
	// +kubebuilder:validation:Enum=naive;cachegen
	Serde string `json:"serde,omitempty"`

	// Where cache server pods may run (it needs memory, not GPUs).
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`
}

// RouterConfig configures the vLLM production-stack router.
//
// +kubebuilder:validation:XValidation:rule="!has(self.prefixMinMatchLength) || (has(self.routerType) && self.routerType == 'prefixaware')",message="prefixMinMatchLength applies to routerType prefixaware only"
// +kubebuilder:validation:XValidation:rule="(!has(self.lmcacheControllerPort) && !has(self.lmcacheControllerReplyPort) && !has(self.lmcacheControllerHeartbeatPort) && !has(self.kvAwareThreshold)) || (has(self.routerType) && self.routerType == 'kvaware')",message="lmcacheControllerPort, lmcacheControllerReplyPort, lmcacheControllerHeartbeatPort and kvAwareThreshold apply to routerType kvaware only"
// +kubebuilder:validation:XValidation:rule="!has(self.routerType) || self.routerType != 'kvaware' || ((!has(self.replicas) || self.replicas <= 1) && (!has(self.autoscaling) || (has(self.autoscaling.enabled) && !self.autoscaling.enabled)))",message="routerType kvaware runs the LMCache controller inside the router, and each engine registers with one router pod: keep one router replica and no router autoscaling"
type RouterConfig struct {
	// Routing logic: roundrobin, session (sticky by the sessionKey header),
	// prefixaware (requests sharing a prompt prefix go to the same engine) or
	// kvaware (to the engine whose LMCache holds the longest cached prefix;
	// needs LMCache on every model and one router replica: the LMCache
	// controller runs inside the router). Default: roundrobin.
	// +optional
	// +kubebuilder:validation:Enum=roundrobin;session;prefixaware;kvaware
	RouterType string `json:"routerType,omitempty"`

	// For routerType prefixaware: the shortest prefix match, in characters,
	// that pins a request to the engine that served the prefix; shorter
	// matches are routed by load. Default: the router's (0). Needs a router
	// image with --prefix-min-match-length.
	// +optional
	// +kubebuilder:validation:Minimum=0
	PrefixMinMatchLength *int32 `json:"prefixMinMatchLength,omitempty"`

	// For routerType kvaware: the port of the LMCache controller in the
	// router, which engines register with. Default: 9000.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	LMCacheControllerPort *int32 `json:"lmcacheControllerPort,omitempty"`

	// For routerType kvaware: the port the LMCache controller in the router
	// answers engines' registrations on. Default: 9001.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	LMCacheControllerReplyPort *int32 `json:"lmcacheControllerReplyPort,omitempty"`

	// For routerType kvaware: the port the LMCache controller in the router
	// receives worker heartbeats on. Default: 9002.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	LMCacheControllerHeartbeatPort *int32 `json:"lmcacheControllerHeartbeatPort,omitempty"`

	// For routerType kvaware: requests whose prompt has more than this many
	// tokens not found in any engine's cache are routed by session or load
	// instead. Default: the router's (2000).
	// +optional
	// +kubebuilder:validation:Minimum=0
	KVAwareThreshold *int32 `json:"kvAwareThreshold,omitempty"`

	// Request header that identifies a session for routerType session.
	// Default: x-user-id.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]*$`
	SessionKey string `json:"sessionKey,omitempty"`

	// Router image with tag, overriding the Composition's Input.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(((?:(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*)(?::([\w][\w.-]{0,127}))?(?:@([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}))?)?$`
	Image string `json:"image,omitempty"`

	// The router release the image runs, e.g. 0.1.9, when its tag does not
	// say (latest, a digest, a custom image). Flags that release does not
	// parse are refused. An lmcache/lmstack-router image tagged with a
	// release needs none; if both are set they must agree. Default: the
	// Composition's Input router.version, else the newest release the
	// function knows.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$`
	RouterVersion string `json:"routerVersion,omitempty"`

	// Pull policy of the router image. Default: Kubernetes' (Always for
	// :latest, else IfNotPresent).
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// Secret (type kubernetes.io/dockerconfigjson) to pull the router image.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ImagePullSecretName string `json:"imagePullSecretName,omitempty"`

	// Where router pods may run: node selection, tolerations, affinity,
	// runtime class, priority and scheduler. The router needs no GPU.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`

	// Annotations of the router pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// An existing ServiceAccount the router pods run as, e.g. one annotated
	// for workload identity; the stack then makes none and binds this one
	// to the router's Role. Default: the stack's own, S-router-service-account.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Extra volumes of the router pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=array
	ExtraVolumes []corev1.Volume `json:"extraVolumes,omitempty"`

	// Extra mounts of the router container, of extraVolumes.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts,omitempty"`

	// Number of router replicas. Default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Router container resources. Default: requests cpu 400m and memory
	// 1000Mi, limit memory 1000Mi.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// How the router reaches engines: pod-ip (each engine pod, the
	// default) or service-name (each model's engine Service).
	// +optional
	// +kubebuilder:validation:Enum=pod-ip;service-name
	K8sServiceDiscoveryType string `json:"k8sServiceDiscoveryType,omitempty"`

	// Extra arguments appended verbatim to vllm-router, last.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ExtraArgs []string `json:"extraArgs,omitempty"`

	// Environment variables of the router container.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Secret holding the API key clients must send (Authorization: Bearer),
	// passed as VLLM_API_KEY to the router and to every engine.
	// +optional
	APIKeySecret *SecretKeySelector `json:"apiKeySecret,omitempty"`

	// The router's Service.
	// +optional
	Service *RouterService `json:"service,omitempty"`

	// A PodDisruptionBudget for the router.
	// +optional
	PodDisruptionBudget *PodDisruptionBudget `json:"podDisruptionBudget,omitempty"`

	// Scale the router with a HorizontalPodAutoscaler; replicas is then not
	// set on its Deployment.
	// +optional
	Autoscaling *RouterAutoscaling `json:"autoscaling,omitempty"`

	// An Ingress in front of the router's Service.
	// +optional
	Ingress *Ingress `json:"ingress,omitempty"`

	// A Gateway API HTTPRoute to the router's Service.
	// +optional
	HTTPRoute *HTTPRoute `json:"httpRoute,omitempty"`
}

// Ingress exposes the router through an Ingress controller.
type Ingress struct {
	// Create the Ingress. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// IngressClass, e.g. nginx.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClassName string `json:"className,omitempty"`

	// Host name, e.g. llm.example.com; unset matches every host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host,omitempty"`

	// Path prefix. Default: /.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// Annotations of the Ingress, e.g. for timeouts of long generations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// TLS Secret for host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}

// HTTPRoute attaches the router to Gateways.
type HTTPRoute struct {
	// Create the HTTPRoute. Default: true when the block is set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Gateways the route attaches to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	ParentRefs []ParentRef `json:"parentRefs"`

	// Host names of the route.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Hostnames []string `json:"hostnames,omitempty"`

	// Path prefix. Default: /.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// ParentRef names a Gateway.
type ParentRef struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the Gateway; unset is the stack's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// Listener of the Gateway.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SectionName string `json:"sectionName,omitempty"`
}

// RouterService configures the router's Service.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || (has(self.type) && (self.type == 'NodePort' || self.type == 'LoadBalancer'))",message="nodePort needs type NodePort or LoadBalancer"
type RouterService struct {
	// Service type. Default: ClusterIP.
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type string `json:"type,omitempty"`

	// Service port. Default: 80.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Annotations of the Service, e.g. for a cloud load balancer.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Fixed node port of the router for type NodePort or LoadBalancer;
	// unset lets Kubernetes pick one.
	// +optional
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	NodePort *int32 `json:"nodePort,omitempty"`
}

// Resources of one engine replica.
type Resources struct {
	// CPU request, e.g. "4" or "3500m".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CPU string `json:"cpu,omitempty"`

	// Memory request, e.g. "16Gi".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Memory string `json:"memory,omitempty"`

	// CPU limit, at least the request. Unset: no limit, so tokenization and
	// scheduling are not throttled.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	CPULimit string `json:"cpuLimit,omitempty"`

	// Memory limit, at least the request (and the LMCache CPU buffer).
	// Unset: no limit. Set it equal to memory for the Guaranteed QoS class.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	MemoryLimit string `json:"memoryLimit,omitempty"`

	// Number of GPUs, requested and limited (extended resources need equal
	// requests and limits).
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]*$`
	GPU string `json:"gpu,omitempty"`

	// Extended resource name of the GPU. Default: nvidia.com/gpu.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	GPUType string `json:"gpuType,omitempty"`

	// Memory of one GPU, e.g. "80Gi", for the sizing warning. Unset: the
	// node selector's nvidia.com/gpu.memory or nvidia.com/gpu.product.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	GPUMemory string `json:"gpuMemory,omitempty"`
}

// Storage is the engine's model cache volume.
//
// +kubebuilder:validation:XValidation:rule="!has(self.emptyDir) || !has(self.existingClaimName) || size(self.existingClaimName) == 0",message="set emptyDir or existingClaimName, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.existingClaimName) || size(self.existingClaimName) == 0 || (!has(self.size) && !has(self.storageClassName) && !has(self.accessModes))",message="existingClaimName mounts a claim the stack does not own: leave out size, storageClassName and accessModes"
type Storage struct {
	// Mount a model cache volume. Default: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Size of the claim the stack creates. Default: 50Gi.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Size string `json:"size,omitempty"`

	// StorageClass of the claim; unset uses the cluster's default class (or
	// the Input's storage.storageClassName), "" binds the claim to a
	// pre-provisioned PersistentVolume without a class (no dynamic
	// provisioning).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// Access modes of the claim. Default: [ReadWriteOnce]. Use ReadWriteMany
	// when several replicas share the cache on different nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`

	// Mount this existing claim instead of creating one; the claim is not
	// owned by the stack and survives its deletion.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ExistingClaimName string `json:"existingClaimName,omitempty"`

	// Keep the model cache in an emptyDir of this size instead of a claim:
	// weights are downloaded again whenever a pod starts on a new node.
	// +optional
	EmptyDir *EmptyDirStorage `json:"emptyDir,omitempty"`

	// Size of the memory-backed /dev/shm. Default: 20Gi, mounted when
	// vllmConfig.tensorParallelSize is above 1; setting it mounts /dev/shm
	// whatever the parallelism.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ShmSize string `json:"shmSize,omitempty"`

	// Extra volumes of the engine pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=array
	ExtraVolumes []corev1.Volume `json:"extraVolumes,omitempty"`

	// Extra mounts of the vllm container.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts,omitempty"`

	// Download the model into the claim once, with a Job, before the
	// engines start; they then read it offline.
	// +optional
	Prefetch *Prefetch `json:"prefetch,omitempty"`
}

// EmptyDirStorage is a model cache that lives as long as the pod.
type EmptyDirStorage struct {
	// Size limit of the emptyDir, e.g. 100Gi; unset is unbounded.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SizeLimit string `json:"sizeLimit,omitempty"`
}

// ProductionStackStatus is the observed state of a stack, written by the
// function.
type ProductionStackStatus struct {
	// OpenAI-compatible endpoint of the router inside the cluster.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Models and their engine replicas.
	// +optional
	Models []ModelStatus `json:"models,omitempty"`

	// Router replicas.
	// +optional
	Router *RouterStatus `json:"router,omitempty"`

	// Ready models out of all models, e.g. 1/2, for kubectl get.
	// +optional
	ReadyModels string `json:"readyModels,omitempty"`
}

// ModelStatus is the observed state of one model's engines.
type ModelStatus struct {
	// Name of the model in the spec.
	Name string `json:"name"`
	// Group of a disaggregated model: prefill or decode.
	// +optional
	Role string `json:"role,omitempty"`
	// Name clients use in the OpenAI API.
	// +optional
	ServedModelName string `json:"servedModelName,omitempty"`
	// Desired replicas.
	// +optional
	Replicas int32 `json:"replicas"`
	// Replicas whose pods are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// Replicas available for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`
	// Replicas running the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// Runtime adapters (model.adapters): on how many of the model's running
	// pods each is loaded, as the adapter sync container reports on its pod.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Adapters []AdapterStatus `json:"adapters,omitempty"`
	// The model's inferenceObjectives and the header a request carries to
	// get each one's priority.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	InferenceObjectives []InferenceObjectiveStatus `json:"inferenceObjectives,omitempty"`
	// Its weights: the state of the Job that fills its cache
	// (storage.prefetch), or whether anything is downloaded without one.
	// +optional
	ModelCache *ModelCacheStatus `json:"modelCache,omitempty"`
	// The version of a model with a canary: its share and promotion.
	// +optional
	Version *VersionStatus `json:"version,omitempty"`
}

// InferenceObjectiveStatus is one of a model's inferenceObjectives.
type InferenceObjectiveStatus struct {
	// Name of the objective in the spec.
	Name string `json:"name"`
	// The request header that selects it, name and value, such as
	// "x-gateway-inference-objective: <stack>-<model>-<name>" (the value is
	// the InferenceObjective's name).
	// +kubebuilder:validation:MaxLength=512
	Header string `json:"header"`
}

// AdapterStatus is one runtime adapter's state on a model's pods.
type AdapterStatus struct {
	// Name of the adapter.
	Name string `json:"name"`
	// Running pods that have loaded it.
	Loaded int32 `json:"loaded"`
	// The model's running pods.
	Pods int32 `json:"pods"`
	// Why it is not loaded where it is not: the sync container's reason on
	// one pod, or that the pod has not reported it yet.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// RouterStatus is the observed state of the router.
type RouterStatus struct {
	// Routing logic in effect: routerConfig.routerType or its default.
	// +optional
	RouterType string `json:"routerType,omitempty"`
	// Desired replicas.
	// +optional
	Replicas int32 `json:"replicas"`
	// Replicas whose pods are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
}

// MaxWorkerHeartbeatTime is the longest lmcacheConfig.workerHeartbeatTime a
// stack takes: below the 30 seconds after which the router's LMCache
// controller drops a worker it has not heard from. The field's Maximum
// marker says the same; TestXRDRules (fn) fails if the function takes a
// value the marker refuses.
const MaxWorkerHeartbeatTime = 29
