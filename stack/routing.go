package stack

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateRouting checks the knobs of the routing logics, and what kvaware
// routing needs from the rest of the stack.
func validateRouting(f *Findings, rc *v1alpha1.RouterConfig, r router, engs []engine) {
	const p = "spec.routerConfig"
	if rc == nil {
		rc = &v1alpha1.RouterConfig{}
	}
	if rc.PrefixMinMatchLength != nil {
		atLeast(f, p+".prefixMinMatchLength", rc.PrefixMinMatchLength, 0)
		if r.routerType != routingPrefixAware {
			f.errorf("%s.prefixMinMatchLength applies to routerType prefixaware only, and routerType is %s: set routerType to prefixaware or remove prefixMinMatchLength", p, r.routerType)
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
		if k.v != nil && r.routerType != routingKVAware {
			f.errorf("%s.%s applies to routerType kvaware only, and routerType is %s: set routerType to kvaware or remove %s", p, k.field, r.routerType, k.field)
		}
	}
	atLeast(f, p+".kvAwareThreshold", rc.KVAwareThreshold, 0)
	for _, k := range ports {
		if port := k.v; port != nil && (*port < 1024 || *port > 65535 || *port == routerPort) {
			f.errorf("%s.%s %d is invalid: must be a port from 1024 to 65535 other than the router's %d", p, k.field, *port, routerPort)
		}
	}
	for _, e := range engs {
		l := e.cfg.LMCacheConfig
		if (r.routerType != routingKVAware || !lmcacheOn(e)) && (l.WorkerPort != nil || l.WorkerHeartbeatTime != nil) {
			f.warnf("%s.lmcacheConfig: workerPort and workerHeartbeatTime have no effect without routerType kvaware and LMCache enabled", e.block)
		}
	}
	validateStickyDiscovery(f, r, engs)
	if r.routerType != routingKVAware {
		return
	}
	if r.discoveryType == discoveryServiceName {
		// The router matches an LMCache instance to an engine by the host
		// of the engine's URL: a pod IP, which service-name discovery
		// replaces by the Service's name.
		f.errorf("%s.k8sServiceDiscoveryType service-name cannot be used with routerType kvaware: the router matches engines' LMCache instances by pod IP; use pod-ip", p)
	}
	if r.controllerPort == r.replyPort || r.controllerPort == r.heartbeatPort || r.replyPort == r.heartbeatPort {
		f.errorf("%s: lmcacheControllerPort %d, lmcacheControllerReplyPort %d and lmcacheControllerHeartbeatPort %d must differ: the LMCache controller binds each of them", p, r.controllerPort, r.replyPort, r.heartbeatPort)
	}
	// The LMCache controller runs inside the router and keeps what engines
	// report in memory: an engine registers with the one router pod its
	// connection reached, so a second router would route blind.
	if r.replicas > 1 {
		f.errorf("%s.replicas %d is invalid with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; use 1 replica", p, r.replicas)
	}
	if a := rc.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
		f.errorf("%s.autoscaling is enabled with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; remove autoscaling", p)
	}
	for _, e := range engs {
		if e.role != "" {
			continue // no routerType routes a disaggregated model (validateDisaggregation says so)
		}
		if !lmcacheOn(e) {
			f.errorf("%s.lmcacheConfig.enabled must be true with routerConfig.routerType kvaware: the router finds cached prefixes through each engine's LMCache; enable LMCache for %s or use routerType prefixaware", e.block, e.id)
			continue
		}
		validateWorkerPorts(f, e)
	}
}

// validateWorkerPorts: the LMCache workers of a pod listen on workerPort and
// the ports above it, one per tensor-parallel worker; none may be a port the
// pod already uses.
func validateWorkerPorts(f *Findings, e engine) {
	first, last := workerPorts(e)
	taken := []int64{enginePort}
	if loraSidecarOn(e) {
		taken = append(taken, loraSidecarPort)
	}
	clash := last > 65535
	for _, t := range taken {
		clash = clash || (t >= first && t <= last)
	}
	if clash {
		f.errorf("%s.lmcacheConfig.workerPort %d is invalid: the LMCache workers listen on %s (one per tensor-parallel worker), which must stay at most 65535 and avoid the engine's %d and the LoRA sidecar's %d", e.block, first, portRange(first, last), enginePort, loraSidecarPort)
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
func validateStickyDiscovery(f *Findings, r router, engs []engine) {
	const p = "spec.routerConfig"
	if r.discoveryType != discoveryServiceName || (r.routerType != routingSession && r.routerType != routingPrefixAware) {
		return
	}
	for _, e := range engs {
		if e.role != "" {
			continue // no routerType routes a disaggregated model (validateDisaggregation says so)
		}
		if n, field := mostEngines(e); n > 1 {
			at, name := e.where(field)
			f.errorf("%s.k8sServiceDiscoveryType service-name cannot be used with routerType %s when a model runs more than one engine (%s: %s %d): the router sees one URL per model, its Service, which spreads requests over every engine, so routing is not sticky; use pod-ip, or one engine", p, r.routerType, at, name(field), n)
		}
	}
}

// mostEngines is the most engine replicas a model may run, and the field
// that sets it.
func mostEngines(e engine) (int32, string) {
	if z := scaleToZero(e); z != nil {
		return ptr.Deref(z.MaxReplicas, 1), "scaleToZero.maxReplicas"
	}
	if a := e.cfg.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
		return ptr.Deref(a.MaxReplicas, 1), "autoscaling.maxReplicas"
	}
	return ptr.Deref(e.cfg.Replicas, 1), "replicas"
}
