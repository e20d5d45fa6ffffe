package helm2stack

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of the engines' pods: init containers, chat templates, rollout
// strategy and probes.

// initContainer becomes pod.initContainers; the chart's env RELEASE_NAME
// and LMCACHE_SERVER_SERVICE_PORT are kept, since its commands use them.
func (c *converter) initContainer(n node) error {
	if n.empty() {
		return nil
	}
	var v struct {
		Name              string                      `json:"name"`
		Image             string                      `json:"image"`
		Command           []string                    `json:"command"`
		Args              []string                    `json:"args"`
		Env               []corev1.EnvVar             `json:"env"`
		Resources         corev1.ResourceRequirements `json:"resources"`
		MountPvcStorage   bool                        `json:"mountPvcStorage"`
		ExtraVolumeMounts []corev1.VolumeMount        `json:"extraVolumeMounts"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if v.Name == "" || v.Image == "" {
		return fmt.Errorf("%s needs a name and an image", n.path)
	}
	ic := &corev1.Container{Name: v.Name, Image: v.Image, Command: v.Command, Args: v.Args, Resources: v.Resources}
	ic.Env = []corev1.EnvVar{{Name: "RELEASE_NAME", Value: c.opts.Name}}
	if b, _ := c.lookup("cacheserverSpec.enabled").v.(bool); b {
		ic.Env = append(ic.Env, corev1.EnvVar{Name: "LMCACHE_SERVER_SERVICE_PORT", Value: "80"})
	}
	ic.Env = append(ic.Env, v.Env...)
	if _, ok := c.cur.fields["pvcStorage"]; ok && v.MountPvcStorage {
		// The model cache volume, named as the chart's (and the stack's).
		ic.VolumeMounts = append(ic.VolumeMounts, corev1.VolumeMount{Name: c.opts.Name + "-storage", MountPath: "/data"})
	}
	ic.VolumeMounts = append(ic.VolumeMounts, v.ExtraVolumeMounts...)
	c.cur.initContainer = ic
	return nil
}

// chatTemplate names the template file; its text is chatTemplateConfigMap.
func (c *converter) chatTemplate(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	if c.cur.fields["chatTemplateConfigMap"].empty() {
		c.res.drop(n.path, "model.chatTemplate is the template text: the chart reads this file from the claim vllm-templates-pvc, which the stack does not mount; put the text in chatTemplateConfigMap")
	}
	return nil
}

func (c *converter) engineStrategy(n node) error {
	if n.empty() {
		return nil
	}
	var s appsv1.DeploymentStrategy
	if err := n.object(&s); err != nil {
		return err
	}
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		c.spec.DeploymentStrategy = string(s.Type)
	case appsv1.RollingUpdateDeploymentStrategyType, "":
		if r := s.RollingUpdate; r != nil {
			c.spec.RollingUpdate = &v1alpha1.RollingUpdate{MaxSurge: r.MaxSurge, MaxUnavailable: r.MaxUnavailable}
		}
	default:
		return fmt.Errorf("%s.type must be RollingUpdate or Recreate, got %q", n.path, s.Type)
	}
	return nil
}

// engineProbe: the timings carry over; the check stays GET /health on 8000.
func (c *converter) engineProbe(n node) error {
	if n.empty() {
		return nil
	}
	var p corev1.Probe
	if err := n.object(&p); err != nil {
		return err
	}
	t := &v1alpha1.Probe{}
	set := func(dst **int32, v int32) {
		if v != 0 {
			*dst = ptr.To(v)
		}
	}
	set(&t.InitialDelaySeconds, p.InitialDelaySeconds)
	set(&t.PeriodSeconds, p.PeriodSeconds)
	set(&t.TimeoutSeconds, p.TimeoutSeconds)
	set(&t.FailureThreshold, p.FailureThreshold)
	probes := ensure(&c.spec.EngineConfig.Probes)
	switch {
	case strings.HasSuffix(n.path, "startupProbe"):
		probes.Startup = t
	case strings.HasSuffix(n.path, "readinessProbe"):
		probes.Readiness = t
	default:
		probes.Liveness = t
	}
	const check = "the check stays GET /health on 8000"
	if h := p.HTTPGet; h != nil && ((h.Path != "" && h.Path != "/health") || (h.Port.String() != "0" && h.Port.String() != "8000") || h.Scheme != "" || len(h.HTTPHeaders) > 0 || h.Host != "") {
		c.res.drop(n.path+".httpGet", check)
	}
	if p.Exec != nil || p.TCPSocket != nil || p.GRPC != nil {
		c.res.drop(n.path, check)
	}
	if p.SuccessThreshold > 1 || p.TerminationGracePeriodSeconds != nil {
		c.res.drop(n.path, "only initialDelaySeconds, periodSeconds, timeoutSeconds and failureThreshold are settable")
	}
	return nil
}
