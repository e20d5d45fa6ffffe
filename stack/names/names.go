package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
)

// ObjectiveKey is the composition resource name of a model's objective,
// with its API group: an objective moves between groups when the picker's
// release changes (inference.networking.x-k8s.io, llm-d.ai), and a key
// never changes group (transition/keys.go).
func ObjectiveKey(model, objective, apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return EngineKey(model) + "-objective-" + objective + "." + group
}

// PickerKey is the composition resource name of a model's picker.
func PickerKey(model string) string { return "engine-" + model + "-epp" }

// The inference extension's HTTPRoutes: one per model, so that no route
// grows with the stack (Gateway API's CRD takes at most 16 rules a route,
// and the XRD 64 models) and no model's path moves to another object when
// models come and go. A model's route always sends /<model> to its pool,
// which the gateway strips (the picker does not tell models apart: a pool
// is one model's engines, and the route chooses the pool).
//
// The gateway's root path (/v1 for clients) belongs to one model at most,
// the root holder, and stays with it for the life of the stack: the first
// model when the stack starts routing through the extension, then whichever
// model the observed routes say holds it. Adding or removing another model
// never moves it; removing the holder leaves it to no model (a warning
// says so) rather than handing its clients to another model's answers.

// AnnotationRootHolder, on every model's HTTPRoute, names the model that
// holds the gateway's root path ("" when none does): where the next
// reconcile reads it, even after the holder's own route is gone.
const AnnotationRootHolder = "serving.vllm.ai/root-path-model"

// ModelRouteKey is the composition resource name of a model's HTTPRoute.
func ModelRouteKey(model string) string { return "engine-" + model + "-httproute" }

// Kubernetes name limits the function respects. Services and label values are
// DNS labels (63); most other objects are DNS subdomains (253).
const (
	MaxLabelLength     = validation.DNS1123LabelMaxLength     // 63
	MaxSubdomainLength = validation.DNS1123SubdomainMaxLength // 253
	hashSuffixLength   = 8
)

// DNSLabel turns a free-form name (e.g. a model name such as
// "Llama-3.2-1B-Instruct") into a DNS label fragment ("llama-3-2-1b-instruct"):
// lower case, every run of characters outside [a-z0-9] becomes one '-', and
// leading and trailing '-' are dropped. It returns "" when nothing is left.
func DNSLabel(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// Shorten returns name unchanged when it fits in limit, and otherwise a
// deterministic shorter form: a prefix of name, '-', and the first 8 hex
// characters of the SHA-256 of the whole name, so two long names that share a
// prefix still get different results.
func Shorten(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:limit-hashSuffixLength-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashSuffixLength]
}

// IsLabelValue reports whether v can be used as a label value as it is.
func IsLabelValue(v string) bool {
	return len(validation.IsValidLabelValue(v)) == 0
}

// Names holds every object name of one stack. Names are those of the vLLM
// production-stack Helm chart 0.1.12 (stack/testdata/helm/chart-names.tsv cites
// each template), so a stack moved from Helm keeps its Service DNS names and
// every name a script, dashboard or copied values file refers to. The engine
// HPA and the NetworkPolicy, which the chart does not have, follow its
// patterns.
type Names struct {
	Stack string // S: the stack's name, a DNS label
}

func (n Names) EngineDeployment(model string) string {
	return Shorten(n.Stack+"-"+model+"-deployment-vllm", MaxSubdomainLength)
}

// EngineLeaderWorkerSet names a multi-node model's LeaderWorkerSet, which
// also names its headless Service (a DNS-1035 label) and its pods,
// <name>-<group> and <name>-<group>-<worker>, whose StatefulSets' revision
// labels add 11 characters: 40 leaves room for 9999 groups of 999 pods.
func (n Names) EngineLeaderWorkerSet(model string) string {
	return Shorten(n.Stack+"-"+model+"-lws", maxLeaderWorkerSetName)
}

const maxLeaderWorkerSetName = 40

func (n Names) EngineService(model string) string {
	return Shorten(n.Stack+"-"+model+"-engine-service", MaxLabelLength)
}

func (n Names) StorageClaim(model string) string {
	return Shorten(n.Stack+"-"+model+"-storage-claim", MaxSubdomainLength)
}

// KVOffloadClaim is the claim of a model's filesystem KV offload tier.
func (n Names) KVOffloadClaim(model string) string {
	return Shorten(n.Stack+"-"+model+"-kv-offload", MaxSubdomainLength)
}

// Fill is the name of a claim's fill Job; its pods' job-name label takes
// it, so it is a DNS label.
func (n Names) Fill(model, hash string) string {
	return Shorten(n.Stack+"-"+model+"-fill-"+hash, MaxLabelLength)
}

func (n Names) ChatTemplates(model string) string {
	return Shorten(n.Stack+"-"+model+"-chat-templates", MaxSubdomainLength)
}

// Volume names are DNS labels. The chart names the model cache volume after
// the release and the chat template volume like its ConfigMap, so a chart's
// extraVolumeMounts or initContainer mount that names them works unchanged.

func (n Names) ModelCacheVolume() string {
	return Shorten(n.Stack+"-storage", MaxLabelLength)
}

func (n Names) ChatTemplatesVolume(model string) string {
	return Shorten(n.Stack+"-"+model+"-chat-templates", MaxLabelLength)
}

func (n Names) EnginePDB(model string) string {
	return Shorten(n.Stack+"-"+model+"-pdb-vllm", MaxSubdomainLength)
}

func (n Names) EngineScaledObject(model string) string {
	return Shorten(n.Stack+"-"+model+"-scaledobject", MaxSubdomainLength)
}

func (n Names) EngineHPA(model string) string {
	return Shorten(n.Stack+"-"+model+"-hpa", MaxSubdomainLength)
}

func (n Names) RouterHPA() string {
	return Shorten(n.Stack+"-router-hpa", MaxSubdomainLength)
}

func (n Names) RouterIngress() string {
	return Shorten(n.Stack+"-ingress-router", MaxSubdomainLength)
}

func (n Names) RouterHTTPRoute() string {
	return Shorten(n.Stack+"-router", MaxSubdomainLength)
}

func (n Names) EngineServiceMonitor() string {
	return Shorten(n.Stack+"-engine-servicemonitor", MaxSubdomainLength)
}

func (n Names) RouterServiceMonitor() string {
	return Shorten(n.Stack+"-router-servicemonitor", MaxSubdomainLength)
}

func (n Names) PickerServiceMonitor() string {
	return Shorten(n.Stack+"-epp-servicemonitor", MaxSubdomainLength)
}

func (n Names) Dashboard() string {
	return Shorten(n.Stack+"-dashboard", MaxSubdomainLength)
}

func (n Names) PrometheusRule() string {
	return Shorten(n.Stack+"-alerts", MaxSubdomainLength)
}

func (n Names) EngineNetworkPolicy() string {
	return Shorten(n.Stack+"-engines", MaxSubdomainLength)
}

func (n Names) CacheServerDeployment() string {
	return Shorten(n.Stack+"-deployment-cache-server", MaxSubdomainLength)
}

func (n Names) CacheServerService() string {
	return Shorten(n.Stack+"-cache-server-service", MaxLabelLength)
}

func (n Names) RouterPDB() string {
	return Shorten(n.Stack+"-pdb-router", MaxSubdomainLength)
}

func (n Names) RouterServiceAccount() string {
	return Shorten(n.Stack+"-router-service-account", MaxSubdomainLength)
}

func (n Names) RouterRole() string {
	return Shorten(n.Stack+"-reader", MaxSubdomainLength)
}

func (n Names) RouterRoleBinding() string {
	return Shorten(n.Stack+"-deployment-access-binding", MaxSubdomainLength)
}

func (n Names) RouterDeployment() string {
	return Shorten(n.Stack+"-deployment-router", MaxSubdomainLength)
}

func (n Names) RouterService() string {
	return Shorten(n.Stack+"-router-service", MaxLabelLength)
}

// The inference extension's objects, which the chart does not have: a
// model's pool, its picker (whose Service name is a DNS label) and the
// stack's route.
func (n Names) InferencePool(model string) string {
	return Shorten(n.Stack+"-"+model+"-pool", MaxSubdomainLength)
}

func (n Names) Picker(model string) string {
	return Shorten(n.Stack+"-"+model+"-epp", MaxLabelLength)
}

// InferenceObjective names a model's objective, whose name is what clients
// send in the objective header: not shortened (validateObjectives refuses
// one that does not fit a DNS subdomain), so it is the name they read.
func (n Names) InferenceObjective(model, objective string) string {
	return n.Stack + "-" + model + "-" + objective
}

// ModelRoute names a model's HTTPRoute (the routes of earlier releases,
// one a stack, were S-inference-route: no model's route takes that name).
func (n Names) ModelRoute(model string) string {
	return Shorten(n.Stack+"-"+model+"-httproute", MaxSubdomainLength)
}

// Composition resource names: the keys of the desired composed resources.
// They are stable for the life of a stack; renaming one makes Crossplane
// delete the object and create a new one. Crossplane keeps the name an
// object was created with for as long as its key stays (it overrides the
// desired name with the observed one), so the objects renamed to the chart's
// names got new keys, named after the new names: a stack made before takes
// the chart's names too instead of keeping the old ones.
func EngineKey(model string) string { return "engine-" + model }

func EngineLWSKey(model string) string { return "engine-" + model + "-leaderworkerset" }

func EngineServiceKey(model string) string { return "engine-" + model + "-service" }

func EngineStorageKey(model string) string { return "engine-" + model + "-storage" }

func EngineKVOffloadKey(model string) string { return "engine-" + model + "-kv-offload" }

// EngineFillKey is the key of the Job that fills a claim: one key per Job
// spec (hash), as a Job's template is immutable and Crossplane keeps an
// object's name for as long as its key stays.
func EngineFillKey(model, hash string) string { return "engine-" + model + "-fill-" + hash }

// EngineFillKeyPrefix is what every fill Job key of a claim starts with.
func EngineFillKeyPrefix(model string) string { return "engine-" + model + "-fill-" }

// IsEngineFillKey reports whether key is one of model's fill Job keys: the
// prefix and a hash, which holds no '-'. Another model's keys can share the
// prefix (model m-fill-x's engine-m-fill-x-service), never the shape.
func IsEngineFillKey(model, key string) bool {
	hash, ok := strings.CutPrefix(key, EngineFillKeyPrefix(model))
	return ok && hash != "" && !strings.Contains(hash, "-")
}

func EngineTemplateKey(model string) string { return "engine-" + model + "-chat-template" }

func EnginePDBKey(model string) string { return "engine-" + model + "-pdb-vllm" }

// A model's autoscaler has one key per kind (transition/keys.go): a key never changes
// kind, and the old autoscaler goes before the new one comes.
func EngineHPAKey(model string) string { return "engine-" + model + "-hpa" }

func EngineScaledObjectKey(model string) string { return "engine-" + model + "-scaledobject" }

// RetiredEngineAutoscalerKey held a model's HorizontalPodAutoscaler or its
// ScaledObject, whichever it had, up to issue 38: no longer composed, only
// recognised as observed (autoscalerKeys).
func RetiredEngineAutoscalerKey(model string) string { return "engine-" + model + "-autoscaler" }

const (
	RouterKey               = "router"
	RouterServiceKey        = "router-service"
	RouterServiceAccountKey = "router-serviceaccount"
	RouterRoleKey           = "router-role"
	RouterRoleBindingKey    = "router-rolebinding"
	RouterPDBKey            = "pdb-router"
	RouterAutoscalerKey     = "router-autoscaler"
	RouterIngressKey        = "ingress-router"
	RouterHTTPRouteKey      = "httproute-router"
	RouterMonitorKey        = "servicemonitor-router"
	EngineMonitorKey        = "engine-servicemonitor"
	PickerMonitorKey        = "servicemonitor-endpoint-picker"
	DashboardKey            = "dashboard"
	PrometheusRuleKey       = "prometheusrule"
	EngineNetworkPolicyKey  = "engines-networkpolicy"
	CacheServerKey          = "cache-server"
	CacheServerServiceKey   = "cache-server-service"
	// InferenceRouteKey is the one HTTPRoute of a stack on the inference
	// extension of earlier releases, kept as observed until every model's
	// own route is (legacyRoute).
	InferenceRouteKey = "inference-httproute"
)

// Composition resource names of the adapter sync objects: a ConfigMap per
// engine, the RBAC once per stack.
func EngineAdaptersKey(model string) string { return "engine-" + model + "-adapters" }

const (
	AdapterSyncServiceAccountKey = "adapter-sync-serviceaccount"
	AdapterSyncRoleKey           = "adapter-sync-role"
	AdapterSyncRoleBindingKey    = "adapter-sync-rolebinding"
)

func (n Names) EngineAdapters(model string) string {
	return Shorten(n.Stack+"-"+model+"-lora-adapters", MaxSubdomainLength)
}

// AdapterSyncServiceAccount always ends in adaptersync.ServiceAccountSuffix,
// which the admission policy selects the sync identity by: a stack's name
// is a DNS label (at most 63 characters), so the name is at most 76 and is
// never shortened.
func (n Names) AdapterSyncServiceAccount() string {
	return n.Stack + adaptersync.ServiceAccountSuffix
}

func (n Names) AdapterSyncRole() string { return Shorten(n.Stack+"-adapter-sync", MaxSubdomainLength) }

func (n Names) AdapterSyncRoleBinding() string {
	return Shorten(n.Stack+"-adapter-sync", MaxSubdomainLength)
}

// GroupID is the id of a disaggregated model's group.
func GroupID(model, role string) string { return Shorten(model+"-"+role, MaxLabelLength) }
