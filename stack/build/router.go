package build

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

const (
	RouterContainer = "router-container"
)

const (
	// routerUID is an unprivileged user for the router; the image's default
	// user is root, which runAsNonRoot would reject.
	routerUID = int64(1000)
)

// RouterServiceAccount is the identity the router discovers engine pods
// with, unless routerConfig.serviceAccountName names one of the user's.
func routerServiceAccount(s *resolve.Stack) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: s.Meta(s.Names.RouterServiceAccount(), routerLabels(s)),
	}
}

// RouterRole grants exactly what the router's release calls for its
// discovery mode (testdata/upstream/router-k8s-calls.tsv): with pod-ip it
// watches the engine pods, from 0.1.6 reads each one it adds (whether it
// can sleep) and, only for engines that can sleep, patches their pods'
// "sleeping" label; with service-name it watches the engine Services, reads
// each one's Endpoints and the Service, lists the pods behind it, and, only
// for engines that can sleep, patches the Service's label. A watch is a
// watch request alone (the Python client's Watch.stream), so no list.
func routerRole(s *resolve.Stack) *rbacv1.Role {
	core := func(resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs}
	}
	sleep := resolve.StackSleepMode(s)
	var rules []rbacv1.PolicyRule
	if s.Router.DiscoveryType == resolve.DiscoveryServiceName {
		services := []string{"get", "watch"}
		if sleep {
			services = append(services, "patch")
		}
		rules = []rbacv1.PolicyRule{core("pods", "list"), core("services", services...), core("endpoints", "get")}
	} else {
		pods := []string{"watch"}
		if !s.Router.Version.Version.Less(upstream.RouterReadsSleepModeSince) {
			pods = []string{"get", "watch"}
			if sleep {
				pods = append(pods, "patch")
			}
		}
		rules = []rbacv1.PolicyRule{core("pods", pods...)}
	}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: s.Meta(s.Names.RouterRole(), routerLabels(s)),
		Rules:      rules,
	}
}

// routerServiceAccountName is the ServiceAccount the router runs as: the
// user's, or the stack's own.
func routerServiceAccountName(s *resolve.Stack) string {
	return resolve.Or(s.Router.ServiceAccount, s.Names.RouterServiceAccount())
}

func routerRoleBinding(s *resolve.Stack) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: s.Meta(s.Names.RouterRoleBinding(), routerLabels(s)),
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: routerServiceAccountName(s), Namespace: s.Namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.Names.RouterRole()},
	}
}

// RouterDeployment builds the vLLM production-stack router.
func RouterDeployment(s *resolve.Stack) *appsv1.Deployment {
	l := routerLabels(s)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.Meta(s.Names.RouterDeployment(), l),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(s.Router.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: names.Selector(s.Name, names.ComponentRouter, names.ComponentRouter)},
			Strategy: strategy(string(appsv1.RollingUpdateDeploymentStrategyType), nil),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: s.Router.PodAnnots},
				Spec: corev1.PodSpec{
					ServiceAccountName: routerServiceAccountName(s),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(routerUID),
						RunAsGroup:     ptr.To(routerUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            RouterContainer,
						Image:           s.Router.Image,
						ImagePullPolicy: s.Router.PullPolicy,
						Args:            RouterArgs(s),
						Env:             routerEnv(s),
						Ports:           routerPorts(s),
						Resources:       *s.Router.Resources.DeepCopy(),
						VolumeMounts:    append([]corev1.VolumeMount{{Name: VolumeRouterHome, MountPath: RouterHome}}, s.Router.ExtraMounts...),
						ReadinessProbe:  httpProbe(names.RouterPort, 5, 3),
						LivenessProbe:   httpProbe(names.RouterPort, 10, 3),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: append([]corev1.Volume{{Name: VolumeRouterHome, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, s.Router.ExtraVolumes...),
				},
			},
		},
	}
	pod := &d.Spec.Template.Spec
	if sc := s.Router.Scheduling; sc != nil {
		schedule(pod, sc)
	}
	if s.Router.ServiceAccount != "" {
		// The router discovers engines through the Kubernetes API: it needs
		// its token even where the user's ServiceAccount turns automounting off.
		pod.AutomountServiceAccountToken = ptr.To(true)
	}
	if s.Router.PullSecret != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s.Router.PullSecret}}
	}
	if resolve.RouterAutoscaled(s) {
		// The HorizontalPodAutoscaler owns them, once handed over (transition/handover.go).
		d.Spec.Replicas = nil
	}
	return d
}

func routerService(s *resolve.Stack) *corev1.Service {
	ports := []corev1.ServicePort{{
		Name: names.RouterSvcPortName, Port: s.Router.ServicePort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromInt32(names.RouterPort), NodePort: ptr.Deref(s.Router.NodePort, 0),
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
		ObjectMeta: withAnnotations(s.Meta(s.Names.RouterService(), routerLabels(s)), s.Router.ServiceAnnots),
		Spec: corev1.ServiceSpec{
			Type:     s.Router.ServiceType,
			Selector: names.Selector(s.Name, names.ComponentRouter, names.ComponentRouter),
			Ports:    ports,
		},
	}
}
