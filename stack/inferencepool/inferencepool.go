// Package inferencepool builds the objects of the Gateway API Inference
// Extension's routing layer for one model: its InferencePool
// (inference.networking.k8s.io/v1), the endpoint picker that serves the
// pool (Deployment, Service, ServiceAccount, Role, RoleBinding and its
// configuration), and the HTTPRoute that sends requests to the pools. It
// takes plain values (names, labels, ports, the picker's release, the
// scorers' weights) and knows nothing of the ProductionStack: the stack
// package reads the spec and decides. Every flag, plugin, port and
// permission traces to ../testdata/upstream/GAIE.md and epp-flags.tsv.
package inferencepool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The picker's ports (its defaults, rendered explicitly since the Service
// and the probes use them) and where its configuration is mounted.
const (
	GRPCPort       = 9002 // ext-proc, which the gateway calls
	GRPCHealthPort = 9003 // gRPC health, the probes'
	MetricsPort    = 9090
	// MetricsPortName is the Service's name of MetricsPort.
	MetricsPortName = "http-metrics"

	ContainerName = "epp"
	configDir     = "/config"
	ConfigKey     = "config.yaml"
	configVolume  = "config"

	// PoolAPIVersion and PoolKind are the InferencePool's, GA since GAIE
	// v1.0.0.
	PoolAPIVersion = "inference.networking.k8s.io/v1"
	PoolKind       = "InferencePool"
	poolGroup      = "inference.networking.k8s.io"
)

// Weights are the scorers' weights; 0 leaves a scorer out.
type Weights struct {
	Queue, KVCacheUtilization, PrefixCache int32
}

// DefaultWeights are both pickers' default configuration's.
var DefaultWeights = Weights{Queue: 2, KVCacheUtilization: 2, PrefixCache: 3}

// A Pool is one model's InferencePool and its endpoint picker.
type Pool struct {
	Name      string // the InferencePool's
	Namespace string
	// Labels of every object of the pool.
	Labels map[string]string
	// Selector selects exactly the model's serving pods.
	Selector map[string]string
	// TargetPort is the engines' API port, where the picker also scrapes
	// their metrics.
	TargetPort  int32
	FailureMode string // FailOpen or FailClose; "" leaves the API's default (FailClose)

	Picker Picker
}

// A Picker is one pool's endpoint picker.
type Picker struct {
	// Name of its Deployment, Service, ServiceAccount, Role, RoleBinding
	// and ConfigMap.
	Name       string
	Image      string
	PullPolicy corev1.PullPolicy
	Release    upstream.PickerRelease
	Replicas   int32
	Resources  corev1.ResourceRequirements
	// PodLabels are the labels of its pods, which its Service selects.
	PodLabels map[string]string
	// PodAnnotations are its pods' annotations; nil: none.
	PodAnnotations map[string]string
	NodeSelector   map[string]string
	Tolerations    []corev1.Toleration
	Affinity       *corev1.Affinity
	Weights        Weights
	// KVCacheMetric is the engines' KV-cache utilisation metric when the
	// picker's default is one the engines do not export; "" keeps it.
	KVCacheMetric string
	// RequestTTLSeconds turns flow control on, with this request TTL: the
	// picker holds a request while the pool has no ready endpoint (a
	// model scaled to zero) for at most that long. 0: off.
	RequestTTLSeconds int64
	// Disaggregated: the pool's model has prefill and decode pods, which
	// the picker schedules itself (ConfigPD).
	Disaggregated bool
}

// DefaultResources are the picker's requests when the stack sets none.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("512Mi"),
	}}
}

// InferencePool is the pool: the model's pods, their API port, and the
// picker's Service that chooses among them.
func InferencePool(p Pool) *unstructured.Unstructured {
	sel := map[string]any{}
	for k, v := range p.Selector {
		sel[k] = v
	}
	ref := map[string]any{"name": p.Picker.Name, "port": map[string]any{"number": int64(GRPCPort)}}
	if p.FailureMode != "" {
		ref["failureMode"] = p.FailureMode
	}
	return object(PoolAPIVersion, PoolKind, p.Name, p.Namespace, p.Labels, map[string]any{
		"selector":          map[string]any{"matchLabels": sel},
		"targetPorts":       []any{map[string]any{"number": int64(p.TargetPort)}},
		"endpointPickerRef": ref,
	})
}

// An Objective is a named priority of the requests to one pool: an
// InferenceObjective the pool's picker looks up by name, the value of the
// objective header a request carries (GAIE.md §h).
type Objective struct {
	Name, Namespace string
	Labels          map[string]string
	// APIVersion is the one the pool's picker release watches
	// (upstream.PickerObjectiveOf).
	APIVersion string
	Pool       string // the InferencePool's name
	Priority   int32
}

// ObjectiveKind is the InferenceObjective's kind, in every group a picker
// watches.
const ObjectiveKind = "InferenceObjective"

// InferenceObjective is the objective: its pool (the picker keeps only the
// objectives whose poolRef names its pool in its pool's group, so both are
// written out rather than left to the CRD's defaults) and its priority.
func InferenceObjective(o Objective) *unstructured.Unstructured {
	return object(o.APIVersion, ObjectiveKind, o.Name, o.Namespace, o.Labels, map[string]any{
		"poolRef":  map[string]any{"group": poolGroup, "kind": PoolKind, "name": o.Pool},
		"priority": int64(o.Priority),
	})
}

// Args are the picker's arguments, every one --flag=value (Go's flag
// package): the pool it serves, its configuration, its ports; metrics
// without authentication (authenticating them needs a ClusterRole, which a
// namespaced stack cannot compose), no tracing (no collector is
// configured); leader election with more than one replica; the engines' KV
// metric where the picker's default is not theirs.
func Args(p Pool) []string {
	args := []string{
		"--pool-name=" + p.Name,
		"--pool-namespace=" + p.Namespace,
		"--pool-group=" + poolGroup,
		"--config-file=" + configDir + "/" + ConfigKey,
		"--grpc-port=" + strconv.Itoa(GRPCPort),
		"--grpc-health-port=" + strconv.Itoa(GRPCHealthPort),
		"--metrics-port=" + strconv.Itoa(MetricsPort),
		"--metrics-endpoint-auth=false",
		"--tracing=false",
	}
	if m := p.Picker.KVCacheMetric; m != "" && !kvMetricInConfig(p.Picker.Release, m) {
		// Only releases that accept the flag get it (GAIE v1.3.x, llm-d
		// v0.6.x); later ones refuse it set at all and take the metric in
		// the configuration (Config).
		args = append(args, "--kv-cache-usage-percentage-metric="+m)
	}
	if p.Picker.Replicas > 1 {
		args = append(args, "--ha-enable-leader-election=true")
	}
	return args
}

// kvMetricInConfig reports whether the configuration names the engines'
// KV-cache metric kvCacheMetric: in the releases whose data layer is on by
// default, and in those that refuse the metric flags but have the data layer
// behind its feature gate (GAIE v1.4.x, llm-d v0.7.x).
func kvMetricInConfig(r upstream.PickerRelease, kvCacheMetric string) bool {
	return kvCacheMetric != "" && (upstream.PickerDataLayer(r) || upstream.PickerRefusesMetricFlags(r))
}

// dataLayerOn reports whether the configuration has the data layer's
// metrics source and extractor: by default from GAIE v1.5.0 and llm-d
// v0.8.0; in the releases before, only to name the KV-cache metric, with
// the data layer's feature gate.
func dataLayerOn(r upstream.PickerRelease, kvCacheMetric string) bool {
	return upstream.PickerDataLayer(r) || kvMetricInConfig(r, kvCacheMetric)
}

// Config is the picker's EndpointPickerConfig: the three scorers the
// pickers' default configuration weighs (those of positive weight) in one
// profile, and from the releases whose metrics come from the data layer,
// its metrics source and extractor, as their default configuration has
// them, the extractor with the engines' KV-cache metric when it is not the
// picker's default (kvCacheMetric); where a release refuses the metric flag
// and has the data layer only behind its feature gate (GAIE v1.4.x, llm-d
// v0.7.x), that gate, source and extractor to name the metric; with ttlSeconds, flow control: its
// feature gate and the request TTL (GAIE.md §g; the releases that take a
// flowControl section, upstream.PickerFlowControl). Written by hand, in a
// fixed order, so it is the same bytes on every call.
func Config(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64) string {
	return config(r, w, kvCacheMetric, ttlSeconds, "", []profile{{name: "default"}})
}

// A profile is a scheduling profile: its name and the filter before its
// scorers ("" none).
type profile struct{ name, filter string }

// config writes a configuration: the scorers, the plugins given (already
// YAML list items), the data layer plugins, then each profile with its
// filter and the scorers.
func config(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64, plugins string, profiles []profile) string {
	scorers := []struct {
		name   string
		weight int32
	}{{"queue-scorer", w.Queue}, {"kv-cache-utilization-scorer", w.KVCacheUtilization}, {"prefix-cache-scorer", w.PrefixCache}}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: EndpointPickerConfig\nplugins:\n", upstream.PickerConfigAPIVersion(r))
	for _, s := range scorers {
		if s.weight > 0 {
			fmt.Fprintf(&b, "- type: %s\n", s.name)
		}
	}
	b.WriteString(plugins)
	dataLayer := dataLayerOn(r, kvCacheMetric)
	extractor := upstream.PickerMetricsExtractor(r)
	if dataLayer {
		fmt.Fprintf(&b, "- type: metrics-data-source\n- type: %s\n", extractor)
		if kvCacheMetric != "" {
			// The vllm engine's metrics, with the engines' KV-cache
			// metric: an engine config named vllm replaces the built-in
			// one, whose other names every vLLM release exports.
			fmt.Fprintf(&b, "  parameters:\n    engineConfigs:\n    - name: vllm\n      queuedRequestsSpec: vllm:num_requests_waiting\n"+
				"      runningRequestsSpec: vllm:num_requests_running\n      kvUsageSpec: %s\n      loraSpec: vllm:lora_requests_info\n"+
				"      cacheInfoSpec: vllm:cache_config_info\n", kvCacheMetric)
		}
	}
	b.WriteString("schedulingProfiles:\n")
	for _, p := range profiles {
		fmt.Fprintf(&b, "- name: %s\n  plugins:\n", p.name)
		if p.filter != "" {
			fmt.Fprintf(&b, "  - pluginRef: %s\n", p.filter)
		}
		for _, s := range scorers {
			if s.weight > 0 {
				fmt.Fprintf(&b, "  - pluginRef: %s\n    weight: %d\n", s.name, s.weight)
			}
		}
	}
	if dataLayer {
		fmt.Fprintf(&b, "%s:\n  sources:\n  - pluginRef: metrics-data-source\n    extractors:\n    - pluginRef: %s\n", upstream.PickerDataLayerKey(r), extractor)
	}
	var gates []string
	if dataLayer && !upstream.PickerDataLayer(r) {
		// Experimental there: off unless gated, and the configuration's
		// data layer is then refused ("disallowed Extractor").
		gates = append(gates, upstream.PickerDataLayerGate)
	}
	if ttlSeconds > 0 {
		gates = append(gates, upstream.PickerFlowControlGate)
	}
	if len(gates) > 0 {
		b.WriteString("featureGates:\n")
		for _, g := range gates {
			fmt.Fprintf(&b, "- %s\n", g)
		}
	}
	if ttlSeconds > 0 {
		// A pool with no endpoint is saturated: flow control queues
		// the request until a pod is ready and scraped, or the TTL.
		fmt.Fprintf(&b, "flowControl:\n  defaultRequestTTL: %ds\n", ttlSeconds)
	}
	return b.String()
}

// ConfigMap holds the picker's configuration.
func ConfigMap(p Pool) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
		Data:       map[string]string{ConfigKey: configOf(p.Picker)},
	}
}

// configOf is a picker's configuration: a disaggregated model's, or
// another's.
func configOf(pk Picker) string {
	if pk.Disaggregated {
		return ConfigPD(pk.Release, pk.Weights, pk.KVCacheMetric, pk.RequestTTLSeconds)
	}
	return Config(pk.Release, pk.Weights, pk.KVCacheMetric, pk.RequestTTLSeconds)
}

// AnnotationConfig, on the picker's pods, is a digest of its configuration
// (ConfigMap): the picker reads its configuration file once, at start
// (GAIE.md §j), so a new configuration (other scorer weights, a queue TTL,
// disaggregation turned on or off) rolls its pods, which then read it.
const AnnotationConfig = "serving.vllm.ai/picker-config"

// ConfigDigest is AnnotationConfig's value for a configuration: the first
// 16 hex digits of its SHA-256.
func ConfigDigest(config string) string {
	sum := sha256.Sum256([]byte(config))
	return hex.EncodeToString(sum[:8])
}

// podAnnotations are the picker pods' annotations: the caller's and the
// configuration's digest.
func podAnnotations(pk Picker) map[string]string {
	a := make(map[string]string, len(pk.PodAnnotations)+1)
	maps.Copy(a, pk.PodAnnotations)
	a[AnnotationConfig] = ConfigDigest(configOf(pk))
	return a
}

// Deployment runs the picker. Recreate, as the inference extension's chart
// does: one replica picks (with several, the elected leader), and a rolling
// update would keep the old leader. The probes are the picker's gRPC
// health service, named as the chart names it.
func Deployment(p Pool) *appsv1.Deployment {
	pk := p.Picker
	health := "inference-extension"
	liveness, readiness := health, health
	if pk.Replicas > 1 {
		liveness, readiness = "liveness", "readiness"
	}
	probe := func(service string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: GRPCHealthPort, Service: ptr.To(service)}},
			PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	live := probe(liveness, 10)
	live.InitialDelaySeconds = 5
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(pk.Name, p.Namespace, p.Labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(pk.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: pk.PodLabels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pk.PodLabels, Annotations: podAnnotations(pk)},
				Spec: corev1.PodSpec{
					ServiceAccountName: pk.Name,
					// The chart's: it outlives a request the picker holds.
					TerminationGracePeriodSeconds: ptr.To(int64(130)),
					NodeSelector:                  pk.NodeSelector,
					Tolerations:                   pk.Tolerations,
					Affinity:                      pk.Affinity,
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           pk.Image,
						ImagePullPolicy: pk.PullPolicy,
						Args:            Args(p),
						Env: []corev1.EnvVar{
							{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
						Ports: []corev1.ContainerPort{
							{Name: "grpc", ContainerPort: GRPCPort, Protocol: corev1.ProtocolTCP},
							{Name: "grpc-health", ContainerPort: GRPCHealthPort, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
						},
						Resources:      pk.Resources,
						LivenessProbe:  live,
						ReadinessProbe: probe(readiness, 2),
						VolumeMounts:   []corev1.VolumeMount{{Name: configVolume, MountPath: configDir, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: pk.Name}},
					}}},
				},
			},
		},
	}
}

// Service is what the InferencePool's endpointPickerRef and a scraper
// reach; the chart's port names.
func Service(p Pool) *corev1.Service {
	port := func(name string, n int32, appProtocol string) corev1.ServicePort {
		sp := corev1.ServicePort{Name: name, Port: n, TargetPort: intstr.FromInt32(n), Protocol: corev1.ProtocolTCP}
		if appProtocol != "" {
			sp.AppProtocol = ptr.To(appProtocol)
		}
		return sp
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: p.Picker.PodLabels,
			Ports: []corev1.ServicePort{
				port("grpc-ext-proc", GRPCPort, "http2"),
				port(MetricsPortName, MetricsPort, ""),
			},
		},
	}
}

// ServiceAccount is the picker's own identity.
func ServiceAccount(p Pool) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
	}
}

// Rules are what the picker's release reads in its namespace, listed and
// watched: pods and its InferencePool; InferenceObjectives and InferenceModelRewrites of the
// groups it watches when their CRDs are served (it decides at start from
// API discovery, which needs no Role); with leader election, leases and
// events. Nothing else: it writes nothing but its lease.
func Rules(p Pool) []rbacv1.PolicyRule {
	// list and watch: every read goes through the picker's cache (the
	// charts' get is never used, GAIE.md §d, observed in e2e).
	read := []string{"list", "watch"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{poolGroup}, Resources: []string{"inferencepools"}, Verbs: read},
		{APIGroups: upstream.PickerObjectiveGroups(p.Picker.Release), Resources: []string{"inferenceobjectives", "inferencemodelrewrites"}, Verbs: read},
	}
	if p.Picker.Replicas > 1 {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	}
	return rules
}

// Role grants Rules.
func Role(p Pool) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
		Rules:      Rules(p),
	}
}

// RoleBinding binds the Role to the picker's ServiceAccount.
func RoleBinding(p Pool) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.Picker.Name, Namespace: p.Namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: p.Picker.Name},
	}
}

// A ParentRef names a Gateway (and its listener) the route attaches to.
type ParentRef struct{ Name, Namespace, SectionName string }

// A Rule sends requests to one pool: all requests, or those under a path
// prefix, which the gateway strips before the engine sees the request.
type Rule struct {
	Pool       string
	PathPrefix string // "" or "/": every request, unchanged
}

// A Route is the HTTPRoute of a stack's pools.
type Route struct {
	Name, Namespace string
	Labels          map[string]string
	Annotations     map[string]string
	Parents         []ParentRef
	Hostnames       []string
	Rules           []Rule
	// RequestTimeout is timeouts.request, a Gateway API duration.
	RequestTimeout string
}

// HTTPRoute builds the route: a rule per pool whose backend is the pool
// itself (group inference.networking.k8s.io, kind InferencePool).
func HTTPRoute(r Route) *unstructured.Unstructured {
	parents := GatewayRefs(r.Parents)
	rules := make([]any, 0, len(r.Rules))
	for _, rule := range r.Rules {
		prefix := rule.PathPrefix
		if prefix == "" {
			prefix = "/"
		}
		out := map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": prefix}}},
			"backendRefs": []any{map[string]any{"group": poolGroup, "kind": PoolKind, "name": rule.Pool}},
		}
		if prefix != "/" {
			out["filters"] = []any{map[string]any{"type": "URLRewrite", "urlRewrite": map[string]any{
				"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"},
			}}}
		}
		if r.RequestTimeout != "" {
			out["timeouts"] = map[string]any{"request": r.RequestTimeout}
		}
		rules = append(rules, out)
	}
	spec := map[string]any{"parentRefs": parents, "rules": rules}
	if len(r.Hostnames) > 0 {
		hosts := make([]any, len(r.Hostnames))
		for i, h := range r.Hostnames {
			hosts[i] = h
		}
		spec["hostnames"] = hosts
	}
	u := object("gateway.networking.k8s.io/v1", "HTTPRoute", r.Name, r.Namespace, r.Labels, spec)
	if len(r.Annotations) > 0 {
		u.SetAnnotations(r.Annotations)
	}
	return u
}

// GatewayRefs are an HTTPRoute's parentRefs to Gateways, as the Gateway
// API writes them (the router's HTTPRoute has them too).
func GatewayRefs(parents []ParentRef) []any {
	out := make([]any, 0, len(parents))
	for _, p := range parents {
		ref := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": p.Name}
		if p.Namespace != "" {
			ref["namespace"] = p.Namespace
		}
		if p.SectionName != "" {
			ref["sectionName"] = p.SectionName
		}
		out = append(out, ref)
	}
	return out
}

func meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// object is an object of a kind the function composes through its CRD.
func object(apiVersion, kind, name, namespace string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(labels)
	return u
}
