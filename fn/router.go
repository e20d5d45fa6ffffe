package fn

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	routerContainer   = "router"
	routerPort        = 8000
	routerPortName    = "router-cport"
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
	// lmcachePortName names the router's LMCache controller port, on the
	// container and the Service (as the chart does).
	lmcachePortName = "lmcache-port"
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

func routerLabels(s *stack) map[string]string {
	return labels(s.name, componentRouter, componentRouter)
}

// routerServiceAccount is the identity the router discovers engine pods with.
func routerServiceAccount(s *stack) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: s.meta(s.names.routerServiceAccount(), routerLabels(s)),
	}
}

// routerRole lets the router watch engine pods, and patch them: it labels
// pods of sleeping engines.
func routerRole(s *stack) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: s.meta(s.names.routerRole(), routerLabels(s)),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"pods"},
			Verbs:     []string{"get", "list", "watch", "patch"},
		}},
	}
}

func routerRoleBinding(s *stack) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: s.meta(s.names.routerRoleBinding(), routerLabels(s)),
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: s.names.routerServiceAccount(), Namespace: s.namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.names.routerRole()},
	}
}

// routerDeployment builds the vLLM production-stack router.
func routerDeployment(s *stack) *appsv1.Deployment {
	l := routerLabels(s)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.meta(s.names.routerDeployment(), l),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.router.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector(s.name, componentRouter, componentRouter)},
			Strategy: strategy(string(appsv1.RollingUpdateDeploymentStrategyType), nil),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: s.router.podAnnots},
				Spec: corev1.PodSpec{
					ServiceAccountName: s.names.routerServiceAccount(),
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
						ReadinessProbe:  httpProbe(routerPort, 5, 3),
						LivenessProbe:   httpProbe(routerPort, 10, 3),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
	pod := &d.Spec.Template.Spec
	if sc := s.router.scheduling; sc != nil {
		schedule(pod, sc)
	}
	if s.router.pullSecret != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s.router.pullSecret}}
	}
	if routerAutoscaled(s) {
		d.Spec.Replicas = nil // the HorizontalPodAutoscaler owns them
	}
	return d
}

// routerPorts: the API port, and with kvaware the LMCache controller's,
// which engines push their cache events to.
func routerPorts(s *stack) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: routerPortName, ContainerPort: routerPort, Protocol: corev1.ProtocolTCP}}
	if p := s.router.controllerPort; p != 0 {
		ports = append(ports, corev1.ContainerPort{Name: lmcachePortName, ContainerPort: p, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// routerArgs are the arguments of vllm-router (the image's entrypoint). The
// router discovers this stack's engine pods by label and sends each request
// to one of them by the routing logic.
func routerArgs(s *stack) []string {
	args := []string{
		"--host", "0.0.0.0",
		"--port", strconv.Itoa(routerPort),
		"--service-discovery", "k8s",
		"--k8s-namespace", s.namespace,
		"--k8s-label-selector", engineDiscoverySelector(s.name),
		"--routing-logic", s.router.routerType,
	}
	if s.router.discoveryType != "" {
		args = append(args, "--k8s-service-discovery-type", s.router.discoveryType)
	}
	switch r := s.router; r.routerType {
	case routingSession:
		// The router exits at start-up with session routing and no key.
		args = append(args, "--session-key", r.sessionKey)
	case routingPrefixAware:
		if n := r.prefixMinMatch; n != nil {
			args = append(args, "--prefix-min-match-length", strconv.Itoa(int(*n)))
		}
	case routingKVAware:
		// The router runs the LMCache controller on this port; engines
		// register with it and report the KV cache chunks they hold. A
		// request whose prefix no engine holds goes by its session header,
		// else by load.
		args = append(args, "--session-key", r.sessionKey,
			"--lmcache-controller-port", strconv.Itoa(int(r.controllerPort)))
		if n := r.kvThreshold; n != nil {
			args = append(args, "--kv-aware-threshold", strconv.Itoa(int(*n)))
		}
	}
	args = append(args,
		"--engine-stats-interval", strconv.Itoa(engineStatsInterval),
		"--request-stats-window", strconv.Itoa(requestStatsWindow))
	return append(args, s.router.extraArgs...)
}

// routerEnv: the API key, so the router can call engines that require it,
// then the user's variables, replacing a computed one of the same name.
func routerEnv(s *stack) []corev1.EnvVar {
	var env []corev1.EnvVar
	if k := s.router.apiKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	if s.router.routerType == routingKVAware {
		env = append(env, hashSeedEnv)
	}
	return overrideEnv(env, s.router.env)
}

func routerService(s *stack) *corev1.Service {
	ports := []corev1.ServicePort{{
		Name: routerSvcPortName, Port: s.router.servicePort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromInt32(routerPort), NodePort: ptr.Deref(s.router.nodePort, 0),
	}}
	if p := s.router.controllerPort; p != 0 {
		// Engines reach the LMCache controller through the Service: one
		// router replica, so every engine registers with the same one.
		ports = append(ports, corev1.ServicePort{
			Name: lmcachePortName, Port: p, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromString(lmcachePortName),
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: withAnnotations(s.meta(s.names.routerService(), routerLabels(s)), s.router.serviceAnnots),
		Spec: corev1.ServiceSpec{
			Type:     s.router.serviceType,
			Selector: selector(s.name, componentRouter, componentRouter),
			Ports:    ports,
		},
	}
}

// controllerURL is where engines find the LMCache controller: host:port,
// the form LMCache's ZeroMQ socket takes.
func controllerURL(s *stack) string {
	return s.names.routerService() + ":" + strconv.Itoa(int(s.router.controllerPort))
}

func withAnnotations(m metav1.ObjectMeta, a map[string]string) metav1.ObjectMeta {
	m.Annotations = a
	return m
}
