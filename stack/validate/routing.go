package validate

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateRouting checks the knobs of the routing logics, and what kvaware
// routing needs from the rest of the stack.
func validateRouting(f *Findings, rc *v1alpha1.RouterConfig, r resolve.Router, engs []resolve.Engine) {
	const p = "spec.routerConfig"
	if rc == nil {
		rc = &v1alpha1.RouterConfig{}
	}
	if rc.PrefixMinMatchLength != nil {
		atLeast(f, p+".prefixMinMatchLength", rc.PrefixMinMatchLength, 0)
		if r.RouterType != resolve.RoutingPrefixAware {
			f.errorf("%s.prefixMinMatchLength applies to routerType prefixaware only, and routerType is %s: set routerType to prefixaware or remove prefixMinMatchLength", p, r.RouterType)
		}
	}
	type knob struct {
		field string
		v     *int32
	}
	ports := []knob{
		{"lmcacheControllerPort", rc.LMCacheControllerPort},
		{"lmcacheControllerReplyPort", rc.LMCacheControllerReplyPort},
		{"lmcacheControllerHeartbeatPort", rc.LMCacheControllerHeartbeatPort},
	}
	for _, k := range append(ports, knob{"kvAwareThreshold", rc.KVAwareThreshold}) {
		if k.v != nil && r.RouterType != resolve.RoutingKVAware {
			f.errorf("%s.%s applies to routerType kvaware only, and routerType is %s: set routerType to kvaware or remove %s", p, k.field, r.RouterType, k.field)
		}
	}
	atLeast(f, p+".kvAwareThreshold", rc.KVAwareThreshold, 0)
	for _, k := range ports {
		if port := k.v; port != nil && (*port < 1024 || *port > 65535 || *port == names.RouterPort) {
			f.errorf("%s.%s %d is invalid: must be a port from 1024 to 65535 other than the router's %d", p, k.field, *port, names.RouterPort)
		}
	}
	for _, e := range engs {
		l := e.Cfg.LMCacheConfig
		if (r.RouterType != resolve.RoutingKVAware || !e.LMCache) && (l.WorkerPort != nil || l.WorkerHeartbeatTime != nil) {
			f.warnf("%s.lmcacheConfig: workerPort and workerHeartbeatTime have no effect without routerType kvaware and LMCache enabled", e.Block)
		}
	}
	validateStickyDiscovery(f, r, engs)
	if r.RouterType != resolve.RoutingKVAware {
		return
	}
	if r.DiscoveryType == resolve.DiscoveryServiceName {
		// The router matches an LMCache instance to an engine by the host
		// of the engine's URL: a pod IP, which service-name discovery
		// replaces by the Service's name.
		f.errorf("%s.k8sServiceDiscoveryType service-name cannot be used with routerType kvaware: the router matches engines' LMCache instances by pod IP; use pod-ip", p)
	}
	if r.ControllerPort == r.ReplyPort || r.ControllerPort == r.HeartbeatPort || r.ReplyPort == r.HeartbeatPort {
		f.errorf("%s: lmcacheControllerPort %d, lmcacheControllerReplyPort %d and lmcacheControllerHeartbeatPort %d must differ: the LMCache controller binds each of them", p, r.ControllerPort, r.ReplyPort, r.HeartbeatPort)
	}
	// The LMCache controller runs inside the router and keeps what engines
	// report in memory: an engine registers with the one router pod its
	// connection reached, so a second router would route blind.
	if r.Replicas > 1 {
		f.errorf("%s.replicas %d is invalid with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; use 1 replica", p, r.Replicas)
	}
	if a := rc.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
		f.errorf("%s.autoscaling is enabled with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; remove autoscaling", p)
	}
	for _, e := range engs {
		if e.Role != "" {
			continue // no routerType routes a disaggregated model (validateDisaggregation says so)
		}
		if !e.LMCache {
			f.errorf("%s.lmcacheConfig.enabled must be true with routerConfig.routerType kvaware: the router finds cached prefixes through each engine's LMCache; enable LMCache for %s or use routerType prefixaware", e.Block, e.ID)
			continue
		}
		validateWorkerPorts(f, e)
	}
}

// validateWorkerPorts: the LMCache workers of a pod listen on workerPort and
// the ports above it, one per tensor-parallel worker; none may be a port the
// pod already uses.
func validateWorkerPorts(f *Findings, e resolve.Engine) {
	first, last := resolve.WorkerPorts(e)
	taken := []int64{names.EnginePort}
	if e.LoRASidecar {
		taken = append(taken, build.LoRASidecarPort)
	}
	clash := last > 65535
	for _, t := range taken {
		clash = clash || (t >= first && t <= last)
	}
	if clash {
		f.errorf("%s.lmcacheConfig.workerPort %d is invalid: the LMCache workers listen on %s (one per tensor-parallel worker), which must stay at most 65535 and avoid the engine's %d and the LoRA sidecar's %d", e.Block, first, portRange(first, last), names.EnginePort, build.LoRASidecarPort)
	}
}

func portRange(first, last int64) string {
	if first == last {
		return fmt.Sprintf("port %d", first)
	}
	return fmt.Sprintf("ports %d to %d", first, last)
}

// validateStickyDiscovery: session and prefixaware routing pick one engine
// URL out of the router's discovered endpoints (router 0.1.12: SessionRouter
// hashes the session id onto a ring of endpoint URLs, PrefixAwareRouter
// keeps a trie of prompts per endpoint URL; routers/routing_logic.py:240-247
// and :502-520). Service-name discovery gives each model one URL, its
// Service's (service_discovery.py:1199, url=f"http://{engine_name}:{port}"),
// so with more than one engine the Service spreads one session's or one
// prefix's requests over all of them. One engine works either way.
func validateStickyDiscovery(f *Findings, r resolve.Router, engs []resolve.Engine) {
	const p = "spec.routerConfig"
	if r.DiscoveryType != resolve.DiscoveryServiceName || (r.RouterType != resolve.RoutingSession && r.RouterType != resolve.RoutingPrefixAware) {
		return
	}
	for _, e := range engs {
		if e.Role != "" {
			continue // no routerType routes a disaggregated model (validateDisaggregation says so)
		}
		if n, field := mostEngines(e); n > 1 {
			at, name := e.Where(field)
			f.errorf("%s.k8sServiceDiscoveryType service-name cannot be used with routerType %s when a model runs more than one engine (%s: %s %d): the router sees one URL per model, its Service, which spreads requests over every engine, so routing is not sticky; use pod-ip, or one engine", p, r.RouterType, at, name(field), n)
		}
	}
}

// mostEngines is the most engine replicas a model may run, and the field
// that sets it.
func mostEngines(e resolve.Engine) (int32, string) {
	if z := e.ScaleToZero; z != nil {
		return ptr.Deref(z.MaxReplicas, 1), "scaleToZero.maxReplicas"
	}
	if a := e.Cfg.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
		return ptr.Deref(a.MaxReplicas, 1), "autoscaling.maxReplicas"
	}
	return ptr.Deref(e.Cfg.Replicas, 1), "replicas"
}
