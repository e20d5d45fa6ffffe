package helm2stack

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of LMCache's kvaware controller settings.

// kvawareDerived: the engines' controller settings follow
// routerConfig.routerType kvaware and the router's ports.
func (c *converter) kvawareDerived(n node) error {
	if _, err := n.scalar(); err != nil && n.v != nil {
		if _, berr := n.boolean(); berr != nil {
			return n.wrongType("a boolean, a number or a string")
		}
	}
	if c.routingLogic() != "kvaware" {
		if !n.empty() {
			c.res.drop(n.path, "derived from routerConfig.routerType kvaware (routerSpec.routingLogic), which is not set")
		}
		return nil
	}
	if strings.HasSuffix(n.path, ".controllerPort") {
		if s, _ := n.scalar(); s != "" && s != fmt.Sprint(ptr.Deref(c.router().LMCacheControllerPort, 9000)) {
			c.res.note(n.path, fmt.Sprintf("the engines' LMCACHE_CONTROLLER_PULL_URL follows routerConfig.lmcacheControllerPort (%d), not %s", ptr.Deref(c.router().LMCacheControllerPort, 9000), s))
		}
	}
	return nil
}

// controllerReplyPort is one setting of the router and every engine.
func (c *converter) controllerReplyPort(n node) error {
	if n.v == nil || n.v == "" {
		return nil
	}
	v, err := n.int32()
	if err != nil {
		return err
	}
	if c.routingLogic() != "kvaware" {
		c.res.drop(n.path, "derived from routerConfig.routerType kvaware (routerSpec.routingLogic), which is not set")
		return nil
	}
	r := c.router()
	switch {
	case r.LMCacheControllerReplyPort == nil:
		r.LMCacheControllerReplyPort = &v
	case *r.LMCacheControllerReplyPort != v:
		c.res.note(n.path, fmt.Sprintf("routerConfig.lmcacheControllerReplyPort is %d for the router and every engine, not %d", *r.LMCacheControllerReplyPort, v))
	}
	return nil
}

// workerPorts is "8001" or "8001,8002": worker i listens on workerPort+i.
func (c *converter) workerPorts(n node) error {
	s, err := n.scalar()
	if err != nil || s == "" {
		return err
	}
	first := strings.TrimSpace(strings.Split(s, ",")[0])
	v, err := node{path: n.path, v: first}.int32()
	if err != nil {
		return err
	}
	ensure(&c.engine().LMCacheConfig).WorkerPort = &v
	if strings.Contains(s, ",") {
		c.res.note(n.path, fmt.Sprintf("lmcacheConfig.workerPort %d: the stack gives tensor-parallel worker i the port %d+i", v, v))
	}
	return nil
}

// workerHeartbeatTime keeps an interval the stack accepts. The chart's
// kvaware tutorial sets 30, the controller's own timeout, where a late
// heartbeat deregisters the engine: that is dropped (the stack's default,
// 10 s, applies) and reported, rather than written into a stack the
// function would refuse.
func (c *converter) workerHeartbeatTime(n node) error {
	return integer(func(c *converter, v *int32) {
		if *v < 1 || *v > v1alpha1.MaxWorkerHeartbeatTime {
			c.res.drop(n.path, fmt.Sprintf("%d s is not below the router's 30 s worker timeout, so an engine would be dropped whenever a heartbeat is late: "+
				"the stack's default 10 s applies (lmcacheConfig.workerHeartbeatTime takes 1 to %d)", *v, v1alpha1.MaxWorkerHeartbeatTime))
			return
		}
		ensure(&c.engine().LMCacheConfig).WorkerHeartbeatTime = v
	})(c, n)
}
