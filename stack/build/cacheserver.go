package build

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

const (
	CacheServerContainer = "lmcache-server"
)

const (
	cacheServerPort = 8080
)

const (
	cacheServerPortName = "caserver-cport"
)

const (
	cacheServerSvcPortName = "cacheserver-sport"
)

// CacheServerCommand is LMCache's cache server, `lmcache_server <host>
// <port>`, as the chart runs it. Current LMCache ships only this server
// (lmcache_v0_server and lmcache_experimental_server are gone). The chart
// runs it from /opt/venv/bin in lmcache/vllm-openai images, as the engines
// run vllm; other images are expected to have it on their PATH.
func CacheServerCommand(image string) []string {
	binary := "lmcache_server"
	if strings.Contains(image, resolve.LMCacheImage) {
		binary = "/opt/venv/bin/" + binary
	}
	return []string{binary, "0.0.0.0", strconv.Itoa(cacheServerPort)}
}

// CacheServerDeployment runs the LMCache server the engines share KV cache
// through.
func cacheServerDeployment(s *resolve.Stack) *appsv1.Deployment {
	c := s.CacheServer
	image := resolve.Or(c.Image, resolve.DefaultCacheServerImg)
	l := cacheServerLabels(s)
	container := corev1.Container{
		Name:    CacheServerContainer,
		Image:   image,
		Command: CacheServerCommand(image),
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
		ObjectMeta: s.Meta(s.Names.CacheServerDeployment(), l),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(c.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: names.Selector(s.Name, names.ComponentCacheServer, names.ComponentCacheServer)},
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

func cacheServerService(s *resolve.Stack) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: s.Meta(s.Names.CacheServerService(), cacheServerLabels(s)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: names.Selector(s.Name, names.ComponentCacheServer, names.ComponentCacheServer),
			Ports: []corev1.ServicePort{{
				Name: cacheServerSvcPortName, Port: names.ServicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(cacheServerPort),
			}},
		},
	}
}
