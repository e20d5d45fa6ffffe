package stack

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

const (
	routerContainer   = "router-container"
	routerPort        = 8000
	routerPortName    = "router-port"
	routerSvcPortName = "router-sport"
	// routerUID is an unprivileged user for the router; the image's default
	// user is root, which runAsNonRoot would reject.
	routerUID = int64(1000)
	// Seconds between the router's scrapes of engine /metrics, and the
	// window of its request statistics.
	engineStatsInterval = 15
	requestStatsWindow  = 60

	routingSession     = "session"
	routingPrefixAware = "prefixaware"
	routingKVAware     = "kvaware"

	discoveryServiceName = "service-name"
	// Names of the router's LMCache controller ports, on the container and
	// the Service: lmcache-port as the chart names it.
	lmcachePortName      = "lmcache-port"
	lmcacheReplyPortName = "lmcache-reply"
	lmcacheBeatPortName  = "lmc-heartbeat"

	// routerHome is the router's HOME, an emptyDir: the image runs as root
	// with HOME=/root, and the unprivileged user the router runs as here
	// could write nowhere. kvaware routing downloads the models' tokenizers
	// into $HOME/.cache/huggingface.
	routerHome       = "/home/router"
	volumeRouterHome = "home"
)

func defaultRouterResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("400m"),
			corev1.ResourceMemory: resource.MustParse("1000Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("1000Mi"),
		},
	}
}

func routerLabels(s *resolvedStack) map[string]string {
	return labels(s.name, ComponentRouter, ComponentRouter)
}

// routerServiceAccount is the identity the router discovers engine pods
// with, unless routerConfig.serviceAccountName names one of the user's.
func routerServiceAccount(s *resolvedStack) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: s.meta(s.names.routerServiceAccount(), routerLabels(s)),
	}
}

// routerRole grants exactly what the router's release calls for its
// discovery mode (testdata/upstream/router-k8s-calls.tsv): with pod-ip it
// watches the engine pods, from 0.1.6 reads each one it adds (whether it
// can sleep) and, only for engines that can sleep, patches their pods'
// "sleeping" label; with service-name it watches the engine Services, reads
// each one's Endpoints and the Service, lists the pods behind it, and, only
// for engines that can sleep, patches the Service's label. A watch is a
// watch request alone (the Python client's Watch.stream), so no list.
func routerRole(s *resolvedStack) *rbacv1.Role {
	core := func(resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs}
	}
	sleep := stackSleepMode(s)
	var rules []rbacv1.PolicyRule
	if s.router.discoveryType == discoveryServiceName {
		services := []string{"get", "watch"}
		if sleep {
			services = append(services, "patch")
		}
		rules = []rbacv1.PolicyRule{core("pods", "list"), core("services", services...), core("endpoints", "get")}
	} else {
		pods := []string{"watch"}
		if !s.router.version.version.Less(upstream.RouterReadsSleepModeSince) {
			pods = []string{"get", "watch"}
			if sleep {
				pods = append(pods, "patch")
			}
		}
		rules = []rbacv1.PolicyRule{core("pods", pods...)}
	}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: s.meta(s.names.routerRole(), routerLabels(s)),
		Rules:      rules,
	}
}

// routerServiceAccountName is the ServiceAccount the router runs as: the
// user's, or the stack's own.
func routerServiceAccountName(s *resolvedStack) string {
	return or(s.router.serviceAccount, s.names.routerServiceAccount())
}

func routerRoleBinding(s *resolvedStack) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: s.meta(s.names.routerRoleBinding(), routerLabels(s)),
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: routerServiceAccountName(s), Namespace: s.namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.names.routerRole()},
	}
}

// routerDeployment builds the vLLM production-stack router.
func routerDeployment(s *resolvedStack) *appsv1.Deployment {
	l := routerLabels(s)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.meta(s.names.routerDeployment(), l),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.router.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector(s.name, ComponentRouter, ComponentRouter)},
			Strategy: strategy(string(appsv1.RollingUpdateDeploymentStrategyType), nil),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: s.router.podAnnots},
				Spec: corev1.PodSpec{
					ServiceAccountName: routerServiceAccountName(s),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(routerUID),
						RunAsGroup:     ptr.To(routerUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            routerContainer,
						Image:           s.router.image,
						ImagePullPolicy: s.router.pullPolicy,
						Args:            routerArgs(s),
						Env:             routerEnv(s),
						Ports:           routerPorts(s),
						Resources:       *s.router.resources.DeepCopy(),
						VolumeMounts:    append([]corev1.VolumeMount{{Name: volumeRouterHome, MountPath: routerHome}}, s.router.extraMounts...),
						ReadinessProbe:  httpProbe(routerPort, 5, 3),
						LivenessProbe:   httpProbe(routerPort, 10, 3),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: append([]corev1.Volume{{Name: volumeRouterHome, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, s.router.extraVolumes...),
				},
			},
		},
	}
	pod := &d.Spec.Template.Spec
	if sc := s.router.scheduling; sc != nil {
		schedule(pod, sc)
	}
	if s.router.serviceAccount != "" {
		// The router discovers engines through the Kubernetes API: it needs
		// its token even where the user's ServiceAccount turns automounting off.
		pod.AutomountServiceAccountToken = ptr.To(true)
	}
	if s.router.pullSecret != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s.router.pullSecret}}
	}
	if routerAutoscaled(s) {
		// The HorizontalPodAutoscaler owns them, once handed over (handOver).
		d.Spec.Replicas = nil
	}
	return d
}

// routerPorts: the API port, and with kvaware the LMCache controller's.
func routerPorts(s *resolvedStack) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: routerPortName, ContainerPort: routerPort, Protocol: corev1.ProtocolTCP}}
	for _, p := range controllerPorts(s) {
		ports = append(ports, corev1.ContainerPort{Name: p.name, ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// controllerPorts are the ports the LMCache controller in the router binds
// with kvaware routing: engines push cache events to the first, register and
// are answered on the reply port, and send heartbeats to the last.
func controllerPorts(s *resolvedStack) []namedPort {
	r := s.router
	if r.controllerPort == 0 {
		return nil
	}
	return []namedPort{{lmcachePortName, r.controllerPort}, {lmcacheReplyPortName, r.replyPort}, {lmcacheBeatPortName, r.heartbeatPort}}
}

type namedPort struct {
	name string
	port int32
}

// routerArgs are the arguments of vllm-router (the image's entrypoint). The
// router discovers this stack's engine pods by label and sends each request
// to one of them by the routing logic. Values from the spec or the XR are
// --name=value (see opt); constants stay --name value; extraArgs are the
// user's own options, verbatim at the end.
func routerArgs(s *resolvedStack) []string {
	args := []string{
		"--host", "0.0.0.0",
		"--port", strconv.Itoa(routerPort),
		"--service-discovery", "k8s",
		opt("--k8s-namespace", s.namespace),
		opt("--k8s-label-selector", engineDiscoverySelector(s.name)),
		opt("--routing-logic", s.router.routerType),
	}
	if s.router.discoveryType != "" {
		args = append(args, opt("--k8s-service-discovery-type", s.router.discoveryType))
	}
	if s.router.discoveryType == discoveryServiceName {
		// The router then dials http://<engine Service>:<k8s-port>; its
		// default, 8000, is the pods' port, not the Services'.
		args = append(args, "--k8s-port", strconv.Itoa(servicePort))
	}
	switch r := s.router; r.routerType {
	case routingSession:
		// The router exits at start-up with session routing and no key.
		args = append(args, opt("--session-key", r.sessionKey))
	case routingPrefixAware:
		if n := r.prefixMinMatch; n != nil {
			args = append(args, opt("--prefix-min-match-length", strconv.Itoa(int(*n))))
		}
	case routingDisaggregated, routingDisaggregatedLMCache:
		// The groups, by their engines' pod label "model".
		prefill, decode, _ := disaggregatedLabels(s)
		args = append(args, opt("--prefill-model-labels", prefill), opt("--decode-model-labels", decode))
	case routingKVAware:
		// The router runs the LMCache controller on this port; engines
		// register with it and report the KV cache chunks they hold. A
		// request whose prefix no engine holds goes by its session header,
		// else by load.
		args = append(args, opt("--session-key", r.sessionKey),
			opt("--lmcache-controller-port", strconv.Itoa(int(r.controllerPort))),
			opt("--lmcache-controller-reply-port", strconv.Itoa(int(r.replyPort))),
			opt("--lmcache-controller-heartbeat-port", strconv.Itoa(int(r.heartbeatPort))))
		if n := r.kvThreshold; n != nil {
			args = append(args, opt("--kv-aware-threshold", strconv.Itoa(int(*n))))
		}
	}
	args = append(args,
		"--engine-stats-interval", strconv.Itoa(engineStatsInterval),
		"--request-stats-window", strconv.Itoa(requestStatsWindow))
	return append(args, s.router.extraArgs...)
}

// routerEnv: a writable HOME; the API key, so the router can call engines
// that require it; with kvaware, the engines' hash seed and their Hugging
// Face token (the router downloads the models' tokenizers); then the user's
// variables, replacing a computed one of the same name.
func routerEnv(s *resolvedStack) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "HOME", Value: routerHome}}
	if k := s.router.apiKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	if s.router.routerType == routingKVAware {
		env = append(env, hashSeedEnv)
		if t := s.hfTokenSecret(); t != nil {
			env = append(env, secretEnv("HF_TOKEN", t))
		}
	}
	return overrideEnv(env, s.router.env)
}

func routerService(s *resolvedStack) *corev1.Service {
	ports := []corev1.ServicePort{{
		Name: routerSvcPortName, Port: s.router.servicePort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromInt32(routerPort), NodePort: ptr.Deref(s.router.nodePort, 0),
	}}
	// Engines reach the LMCache controller through the Service: one router
	// replica, so every engine registers with the same one.
	for _, p := range controllerPorts(s) {
		ports = append(ports, corev1.ServicePort{
			Name: p.name, Port: p.port, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromString(p.name),
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: withAnnotations(s.meta(s.names.routerService(), routerLabels(s)), s.router.serviceAnnots),
		Spec: corev1.ServiceSpec{
			Type:     s.router.serviceType,
			Selector: selector(s.name, ComponentRouter, ComponentRouter),
			Ports:    ports,
		},
	}
}

// controllerURL is where engines find a port of the LMCache controller:
// host:port, the form LMCache's ZeroMQ sockets take.
func controllerURL(s *resolvedStack, port int32) string {
	return s.names.routerService() + ":" + strconv.Itoa(int(port))
}

func withAnnotations(m metav1.ObjectMeta, a map[string]string) metav1.ObjectMeta {
	m.Annotations = a
	return m
}
