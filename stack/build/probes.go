package build

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

const (
	healthPath = "/health"
)

func httpProbe(port int32, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: healthPath, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		FailureThreshold: failures,
	}
}

// tune applies the user's probe overrides to a default probe.
func tune(p *corev1.Probe, o *v1alpha1.Probe) *corev1.Probe {
	if o == nil {
		return p
	}
	for _, f := range []struct {
		dst *int32
		src *int32
	}{
		{&p.InitialDelaySeconds, o.InitialDelaySeconds},
		{&p.PeriodSeconds, o.PeriodSeconds},
		{&p.TimeoutSeconds, o.TimeoutSeconds},
		{&p.FailureThreshold, o.FailureThreshold},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return p
}

// StartupBudget is the seconds the engine's startup probe lets it take to
// start: the start-up budget by the model's size, or probes.startup.
func StartupBudget(e resolve.Engine) int64 {
	p := StartupProbe(e)
	return int64(p.InitialDelaySeconds) + int64(p.PeriodSeconds)*int64(p.FailureThreshold)
}

// ColdStartSeconds is how long a request may wait for the model to start
// from zero: coldStartSeconds, else the start-up budget.
func ColdStartSeconds(e resolve.Engine) int64 {
	if z := e.ScaleToZero; z != nil && z.ColdStartSeconds != nil {
		return int64(*z.ColdStartSeconds)
	}
	return StartupBudget(e)
}

// StartupProbe is the engine's startup probe: its budget in seconds, the
// user's overrides applied, turned into a failureThreshold at the probe's
// period (an override of periodSeconds alone keeps the budget).
func StartupProbe(e resolve.Engine) *corev1.Probe {
	o := e.Cfg.Probes.Startup
	period := int32(resolve.StartupPeriod)
	if o != nil && o.PeriodSeconds != nil && *o.PeriodSeconds > 0 {
		period = *o.PeriodSeconds
	}
	failures := int32(math.Ceil(float64(resolve.StartupSeconds(e)) / float64(period)))
	return tune(httpProbe(e.VLLMPort, period, failures), o)
}

// RolloutMarginSeconds is the time, beyond the startup probe's budget, that
// an engine pod may take to be scheduled, pull its image and pass its first
// readiness probe: Kubernetes' own default progress deadline.
const RolloutMarginSeconds = 600

// progressDeadline is the engine Deployment's progressDeadlineSeconds. The
// default, 600, is shorter than most startup budgets: a healthy rollout of a
// large model would be reported as failed (ProgressDeadlineExceeded) while
// the model still downloads, and `kubectl rollout status` would fail.
func progressDeadline(probe *corev1.Probe) int32 {
	return probe.InitialDelaySeconds + probe.PeriodSeconds*probe.FailureThreshold + RolloutMarginSeconds
}
