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
	// FlowControl turns flow control on without a request TTL, for its
	// pool saturation gauge, which only its dispatch cycle records (a
	// model autoscaled on poolSaturation; GAIE.md (k)).
	FlowControl bool
	// Disaggregated: the pool's model has prefill and decode pods, which
	// the picker schedules itself (ConfigPD).
	Disaggregated bool
	// Precise: the picker routes on the engines' KV events
	// (ConfigPrecise); nil: the prefix-cache scorer estimates.
	Precise *Precise
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
