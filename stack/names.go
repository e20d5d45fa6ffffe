package stack

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kubernetes name limits the function respects. Services and label values are
// DNS labels (63); most other objects are DNS subdomains (253).
const (
	maxLabelLength     = validation.DNS1123LabelMaxLength     // 63
	maxSubdomainLength = validation.DNS1123SubdomainMaxLength // 253
	hashSuffixLength   = 8
)

// dnsLabel turns a free-form name (e.g. a model name such as
// "Llama-3.2-1B-Instruct") into a DNS label fragment ("llama-3-2-1b-instruct"):
// lower case, every run of characters outside [a-z0-9] becomes one '-', and
// leading and trailing '-' are dropped. It returns "" when nothing is left.
func dnsLabel(s string) string {
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

// shorten returns name unchanged when it fits in limit, and otherwise a
// deterministic shorter form: a prefix of name, '-', and the first 8 hex
// characters of the SHA-256 of the whole name, so two long names that share a
// prefix still get different results.
func shorten(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:limit-hashSuffixLength-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashSuffixLength]
}

// isLabelValue reports whether v can be used as a label value as it is.
func isLabelValue(v string) bool {
	return len(validation.IsValidLabelValue(v)) == 0
}

// names holds every object name of one stack. Names are those of the vLLM
// production-stack Helm chart 0.1.12 (stack/testdata/helm/chart-names.tsv cites
// each template), so a stack moved from Helm keeps its Service DNS names and
// every name a script, dashboard or copied values file refers to. The engine
// HPA and the NetworkPolicy, which the chart does not have, follow its
// patterns.
type names struct {
	stack string // S: the stack's name, a DNS label
}

func (n names) engineDeployment(model string) string {
	return shorten(n.stack+"-"+model+"-deployment-vllm", maxSubdomainLength)
}

// engineLeaderWorkerSet names a multi-node model's LeaderWorkerSet, which
// also names its headless Service (a DNS-1035 label) and its pods,
// <name>-<group> and <name>-<group>-<worker>, whose StatefulSets' revision
// labels add 11 characters: 40 leaves room for 9999 groups of 999 pods.
func (n names) engineLeaderWorkerSet(model string) string {
	return shorten(n.stack+"-"+model+"-lws", maxLeaderWorkerSetName)
}

const maxLeaderWorkerSetName = 40

func (n names) engineService(model string) string {
	return shorten(n.stack+"-"+model+"-engine-service", maxLabelLength)
}

func (n names) storageClaim(model string) string {
	return shorten(n.stack+"-"+model+"-storage-claim", maxSubdomainLength)
}

func (n names) chatTemplates(model string) string {
	return shorten(n.stack+"-"+model+"-chat-templates", maxSubdomainLength)
}

// Volume names are DNS labels. The chart names the model cache volume after
// the release and the chat template volume like its ConfigMap, so a chart's
// extraVolumeMounts or initContainer mount that names them works unchanged.

func (n names) modelCacheVolume() string {
	return shorten(n.stack+"-storage", maxLabelLength)
}

func (n names) chatTemplatesVolume(model string) string {
	return shorten(n.stack+"-"+model+"-chat-templates", maxLabelLength)
}

func (n names) enginePDB(model string) string {
	return shorten(n.stack+"-"+model+"-pdb-vllm", maxSubdomainLength)
}

func (n names) engineScaledObject(model string) string {
	return shorten(n.stack+"-"+model+"-scaledobject", maxSubdomainLength)
}

func (n names) engineHPA(model string) string {
	return shorten(n.stack+"-"+model+"-hpa", maxSubdomainLength)
}

func (n names) routerHPA() string {
	return shorten(n.stack+"-router-hpa", maxSubdomainLength)
}

func (n names) routerIngress() string {
	return shorten(n.stack+"-ingress-router", maxSubdomainLength)
}

func (n names) routerHTTPRoute() string {
	return shorten(n.stack+"-router", maxSubdomainLength)
}

func (n names) engineServiceMonitor() string {
	return shorten(n.stack+"-engine-servicemonitor", maxSubdomainLength)
}

func (n names) routerServiceMonitor() string {
	return shorten(n.stack+"-router-servicemonitor", maxSubdomainLength)
}

func (n names) pickerServiceMonitor() string {
	return shorten(n.stack+"-epp-servicemonitor", maxSubdomainLength)
}

func (n names) dashboard() string {
	return shorten(n.stack+"-dashboard", maxSubdomainLength)
}

func (n names) prometheusRule() string {
	return shorten(n.stack+"-alerts", maxSubdomainLength)
}

func (n names) engineNetworkPolicy() string {
	return shorten(n.stack+"-engines", maxSubdomainLength)
}

func (n names) cacheServerDeployment() string {
	return shorten(n.stack+"-deployment-cache-server", maxSubdomainLength)
}

func (n names) cacheServerService() string {
	return shorten(n.stack+"-cache-server-service", maxLabelLength)
}

func (n names) routerPDB() string {
	return shorten(n.stack+"-pdb-router", maxSubdomainLength)
}

func (n names) routerServiceAccount() string {
	return shorten(n.stack+"-router-service-account", maxSubdomainLength)
}

func (n names) routerRole() string {
	return shorten(n.stack+"-reader", maxSubdomainLength)
}

func (n names) routerRoleBinding() string {
	return shorten(n.stack+"-deployment-access-binding", maxSubdomainLength)
}

func (n names) routerDeployment() string {
	return shorten(n.stack+"-deployment-router", maxSubdomainLength)
}

func (n names) routerService() string {
	return shorten(n.stack+"-router-service", maxLabelLength)
}

// The inference extension's objects, which the chart does not have: a
// model's pool, its picker (whose Service name is a DNS label) and the
// stack's route.
func (n names) inferencePool(model string) string {
	return shorten(n.stack+"-"+model+"-pool", maxSubdomainLength)
}

func (n names) picker(model string) string {
	return shorten(n.stack+"-"+model+"-epp", maxLabelLength)
}

// inferenceObjective names a model's objective, whose name is what clients
// send in the objective header: not shortened (validateObjectives refuses
// one that does not fit a DNS subdomain), so it is the name they read.
func (n names) inferenceObjective(model, objective string) string {
	return n.stack + "-" + model + "-" + objective
}

// modelRoute names a model's HTTPRoute (the routes of earlier releases,
// one a stack, were S-inference-route: no model's route takes that name).
func (n names) modelRoute(model string) string {
	return shorten(n.stack+"-"+model+"-httproute", maxSubdomainLength)
}

// Composition resource names: the keys of the desired composed resources.
// They are stable for the life of a stack; renaming one makes Crossplane
// delete the object and create a new one. Crossplane keeps the name an
// object was created with for as long as its key stays (it overrides the
// desired name with the observed one), so the objects renamed to the chart's
// names got new keys, named after the new names: a stack made before takes
// the chart's names too instead of keeping the old ones.
func engineKey(model string) string         { return "engine-" + model }
func engineLWSKey(model string) string      { return "engine-" + model + "-leaderworkerset" }
func engineServiceKey(model string) string  { return "engine-" + model + "-service" }
func engineStorageKey(model string) string  { return "engine-" + model + "-storage" }
func engineTemplateKey(model string) string { return "engine-" + model + "-chat-template" }
func enginePDBKey(model string) string      { return "engine-" + model + "-pdb-vllm" }

// A model's autoscaler has one key per kind (keys.go): a key never changes
// kind, and the old autoscaler goes before the new one comes.
func engineHPAKey(model string) string          { return "engine-" + model + "-hpa" }
func engineScaledObjectKey(model string) string { return "engine-" + model + "-scaledobject" }

// retiredEngineAutoscalerKey held a model's HorizontalPodAutoscaler or its
// ScaledObject, whichever it had, up to issue 38: no longer composed, only
// recognised as observed (autoscalerKeys).
func retiredEngineAutoscalerKey(model string) string { return "engine-" + model + "-autoscaler" }

const (
	routerKey               = "router"
	routerServiceKey        = "router-service"
	routerServiceAccountKey = "router-serviceaccount"
	routerRoleKey           = "router-role"
	routerRoleBindingKey    = "router-rolebinding"
	routerPDBKey            = "pdb-router"
	routerAutoscalerKey     = "router-autoscaler"
	routerIngressKey        = "ingress-router"
	routerHTTPRouteKey      = "httproute-router"
	routerMonitorKey        = "servicemonitor-router"
	engineMonitorKey        = "engine-servicemonitor"
	pickerMonitorKey        = "servicemonitor-endpoint-picker"
	dashboardKey            = "dashboard"
	prometheusRuleKey       = "prometheusrule"
	engineNetworkPolicyKey  = "engines-networkpolicy"
	cacheServerKey          = "cache-server"
	cacheServerServiceKey   = "cache-server-service"
	// inferenceRouteKey is the one HTTPRoute of a stack on the inference
	// extension of earlier releases, kept as observed until every model's
	// own route is (legacyRoute).
	inferenceRouteKey = "inference-httproute"
)
