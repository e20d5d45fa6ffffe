package resolve

import (
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Defaults of the shutdown block: llm-d's guides drain 30 s (llm-d PR #1653,
// --shutdown-timeout=30); the routing delay covers a watch event reaching the
// router or the picker and kube-proxy's endpoints (both drop a pod on its
// deletionTimestamp: upstream.RouterDropsTerminatingSince, GAIE's
// pkg/epp/util/pod/pod.go IsPodReady).
const (
	DefaultDrainSeconds        = 30
	DefaultRoutingDelaySeconds = 5
	// ExitMarginSeconds is the grace the pod has beyond the routing delay
	// and the drain, for vLLM to stop its engine and worker processes once
	// the drain ends (their own shutdown waits are a few seconds each).
	ExitMarginSeconds = 20
)

// Drain is how an engine's pod stops (the shutdown block, its release and
// its role).
type Drain struct {
	// Seconds in flight requests may take (shutdown.drainSeconds) and the
	// preStop delay before vLLM is signalled (routingDelaySeconds).
	Seconds, RoutingDelay int32
	// Flag: vLLM takes --shutdown-timeout (upstream.VLLMShutdownTimeoutSince);
	// it is rendered then with Seconds, whether vLLM or the pod drains.
	Flag bool
	// InPreStop: the pod drains before vLLM is signalled, as vLLM's own
	// drain does not cover it: a release without --shutdown-timeout, or a
	// prefill engine whose drain does not wait for its KV to be read
	// (before upstream.VLLMDrainWaitsForKVReadsSince).
	InPreStop bool
	// PreStopSeconds is the pod's preStop sleep; WorkerPreStopSeconds a
	// multi-node worker's, which outlives its leader's drain (its leader
	// fails the requests in flight if a worker goes); GraceSeconds and
	// WorkerGraceSeconds their terminationGracePeriodSeconds (0:
	// Kubernetes' default, when both fields are 0).
	PreStopSeconds, WorkerPreStopSeconds int32
	GraceSeconds, WorkerGraceSeconds     int64
}

// ShutdownOf is the shutdown block of a configuration with its defaults.
func ShutdownOf(s *v1alpha1.Shutdown) (drain, delay int32) {
	drain, delay = DefaultDrainSeconds, DefaultRoutingDelaySeconds
	if s != nil && s.DrainSeconds != nil {
		drain = *s.DrainSeconds
	}
	if s != nil && s.RoutingDelaySeconds != nil {
		delay = *s.RoutingDelaySeconds
	}
	return drain, delay
}

// drainOf derives an engine's Drain.
func drainOf(e Engine) Drain {
	d := Drain{}
	d.Seconds, d.RoutingDelay = ShutdownOf(e.Cfg.Shutdown)
	known := e.VLLMErr == nil
	d.Flag = known && e.VLLM.Version.AtLeast(upstream.VLLMShutdownTimeoutSince)
	prefillBeforeKVWait := e.Role == RolePrefill && e.Transfer != "" && (!known || e.VLLM.Version.Less(upstream.VLLMDrainWaitsForKVReadsSince))
	d.InPreStop = d.Seconds > 0 && (!d.Flag || prefillBeforeKVWait)
	d.PreStopSeconds = d.RoutingDelay
	if d.InPreStop {
		d.PreStopSeconds += d.Seconds
	}
	d.WorkerPreStopSeconds = d.RoutingDelay + d.Seconds
	if d.Seconds > 0 || d.RoutingDelay > 0 {
		d.GraceSeconds, d.WorkerGraceSeconds = d.grace(d.PreStopSeconds), d.grace(d.WorkerPreStopSeconds)
	}
	return d
}

// grace is the terminationGracePeriodSeconds of a pod whose preStop sleeps
// that long: the kubelet counts the sleep in it, then vLLM may drain for
// --shutdown-timeout, then it needs ExitMarginSeconds to exit.
func (d Drain) grace(preStop int32) int64 {
	g := int64(preStop) + ExitMarginSeconds
	if d.Flag {
		g += int64(d.Seconds)
	}
	return g
}
