package names

const (
	ComponentCacheServer = "cache-server"
)

// The stack's dashboard and alerts (monitoring.dashboard,
// monitoring.alerts): stack/observability builds them from what the stack
// runs, at the releases it runs. Both need the ServiceMonitors, whose
// scrape gives the series the namespace and service labels the queries
// select by (ValidateMonitoring).

// ComponentMonitoring is the component label of the dashboard's ConfigMap
// and the PrometheusRule.
const ComponentMonitoring = "monitoring"

// The inference extension's routing layer (spec.inferenceExtension): per
// model an InferencePool over the model's serving pods and an endpoint
// picker that chooses one of them for each request, and one HTTPRoute on
// the user's Gateway whose backends are the pools. It replaces the
// production-stack router. The objects are built by stack/inferencepool
// from the values decided here.

// ComponentPicker is the component label of the endpoint pickers' objects.
const ComponentPicker = "endpoint-picker"

// Label keys and values shared by every object of a stack. The router finds
// engine pods by instance and component, and reads the model label; the LoRA
// controller reads the model label too.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelModel     = "model"
	// LabelVersion is on a model's canary objects and pods (model.canary):
	// "canary". The model's own carry none, so adding a canary changes
	// nothing of theirs.
	LabelVersion = "serving.vllm.ai/version"

	ComponentEngine = "serving-engine"
	ComponentRouter = "router"
	PartOf          = "vllm-stack"
	ManagedBy       = "crossplane"
)

// Selector returns the labels that identify a component's pods. They never
// change for the life of a stack: a Deployment's selector is immutable.
func Selector(stack, name, component string) map[string]string {
	return map[string]string{
		LabelName:      name,
		LabelInstance:  stack,
		LabelComponent: component,
	}
}

// Labels returns every label of a component's objects and pods.
func Labels(stack, name, component string) map[string]string {
	l := Selector(stack, name, component)
	l[LabelPartOf] = PartOf
	l[LabelManagedBy] = ManagedBy
	return l
}

// A multi-node model (multiNode) is a LeaderWorkerSet (kubernetes-sigs/lws
// v0.7.0) instead of a Deployment: each replica is a group of
// podsPerReplica pods, a leader that serves the API and workers that join
// it, running one engine with vLLM's multi-node (mp) backend: every pod runs
// `vllm serve` with --nnodes, its --node-rank and the leader's address as
// --master-addr; the workers are --headless (before vLLM 0.12.0, Ray: see
// MultiNodeSince). The LWS pod webhook gives every container
// LWS_LEADER_ADDRESS (the leader pod's DNS name), LWS_WORKER_INDEX and
// LWS_GROUP_SIZE, which the kubelet expands in the arguments. Facts:
// testdata/upstream/multinode.tsv and DISAGG-MULTINODE.md §3.

// ComponentEngineWorker is the component of a multi-node model's worker
// pods: the router, the engine Service and the engines' NetworkPolicy rule
// for the router select the leaders (ComponentEngine) only, since workers
// serve no HTTP.
const ComponentEngineWorker = "serving-engine-worker"
