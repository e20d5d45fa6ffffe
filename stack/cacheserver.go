package stack

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

const (
	componentCacheServer    = "cache-server"
	cacheServerContainer    = "lmcache-server"
	cacheServerPort         = 8080
	cacheServerPortName     = "caserver-cport"
	cacheServerSvcPortName  = "cacheserver-sport"
	defaultCacheServerImg   = "lmcache/vllm-openai:latest"
	defaultCacheServerSerde = "naive"
)

// cacheServerOn reports whether the stack runs an LMCache cache server.
func cacheServerOn(s *resolvedStack) bool {
	c := s.cacheServer
	return c != nil && (c.Enabled == nil || *c.Enabled)
}

// cacheServerURL is what engines use as LMCACHE_REMOTE_URL.
func cacheServerURL(s *resolvedStack) string {
	return "lm://" + s.names.cacheServerService() + ":" + strconv.Itoa(servicePort)
}

func cacheServerLabels(s *resolvedStack) map[string]string {
	return labels(s.name, componentCacheServer, componentCacheServer)
}

// cacheServerCommand is LMCache's cache server, `lmcache_server <host>
// <port>`, as the chart runs it. Current LMCache ships only this server
// (lmcache_v0_server and lmcache_experimental_server are gone). The chart
// runs it from /opt/venv/bin in lmcache/vllm-openai images, as the engines
// run vllm; other images are expected to have it on their PATH.
func cacheServerCommand(image string) []string {
	binary := "lmcache_server"
	if strings.Contains(image, lmcacheImage) {
		binary = "/opt/venv/bin/" + binary
	}
	return []string{binary, "0.0.0.0", strconv.Itoa(cacheServerPort)}
}

// cacheServerDeployment runs the LMCache server the engines share KV cache
// through.
func cacheServerDeployment(s *resolvedStack) *appsv1.Deployment {
	c := s.cacheServer
	image := or(c.Image, defaultCacheServerImg)
	l := cacheServerLabels(s)
	container := corev1.Container{
		Name:    cacheServerContainer,
		Image:   image,
		Command: cacheServerCommand(image),
		Ports:   []corev1.ContainerPort{{Name: cacheServerPortName, ContainerPort: cacheServerPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(cacheServerPort)}},
			PeriodSeconds: 5, FailureThreshold: 3,
		},
	}
	if c.Resources != nil {
		container.Resources = *c.Resources.DeepCopy()
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.meta(s.names.cacheServerDeployment(), l),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(c.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector(s.name, componentCacheServer, componentCacheServer)},
			// A new server is ready before the old one stops, so engines
			// always have one to reach (its cache starts empty).
			Strategy: strategy(string(appsv1.RollingUpdateDeploymentStrategyType), nil),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{container},
				},
			},
		},
	}
	if sc := c.Scheduling; sc != nil {
		schedule(&d.Spec.Template.Spec, sc)
	}
	return d
}

func cacheServerService(s *resolvedStack) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: s.meta(s.names.cacheServerService(), cacheServerLabels(s)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector(s.name, componentCacheServer, componentCacheServer),
			Ports: []corev1.ServicePort{{
				Name: cacheServerSvcPortName, Port: servicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(cacheServerPort),
			}},
		},
	}
}

// validateCacheServer: the server is stack-wide, so only the top level may
// configure it.
func validateCacheServer(f *Findings, spec *v1alpha1.ProductionStackSpec) {
	for i, m := range spec.Models {
		if m.LMCacheConfig != nil && m.LMCacheConfig.Server != nil {
			f.errorf("spec.models[%d].lmcacheConfig.server: the cache server is shared by the stack: set it in spec.lmcacheConfig.server", i)
		}
	}
	if l := spec.LMCacheConfig; l != nil && l.Server != nil {
		oneOf(f, "spec.lmcacheConfig.server.serde", l.Server.Serde, remoteSerdes)
		atLeast(f, "spec.lmcacheConfig.server.replicas", l.Server.Replicas, 0)
		image(f, "spec.lmcacheConfig.server.image", l.Server.Image)
		if l.Server.Resources != nil {
			validateResourceRequirements(f, "spec.lmcacheConfig.server.resources", *l.Server.Resources)
		}
		validateScheduling(f, "spec.lmcacheConfig.server.scheduling", l.Server.Scheduling)
	}
}
