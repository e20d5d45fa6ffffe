package build

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// RouteAPIVersion and RouteKind are the HTTPRoute's.
const (
	RouteAPIVersion = "gateway.networking.k8s.io/v1"
	RouteKind       = "HTTPRoute"
)

// ModelRoute is a model's HTTPRoute: /<model> to its pool, and / too when
// the model holds the gateway's root path; with canary, each rule splits
// between the model's pool and its canary's by the canary's weight.
func ModelRoute(s *resolve.Stack, e resolve.Engine, rootHolder string, canary bool) runtime.Object {
	x := s.Extension.Spec
	r := inferencepool.Route{
		Name: s.Names.ModelRoute(e.ID), Namespace: s.Namespace,
		Labels:         Pool(s, e).Labels,
		Annotations:    map[string]string{names.AnnotationRootHolder: rootHolder},
		Hostnames:      x.Hostnames,
		RequestTimeout: resolve.Or(x.RequestTimeout, routeTimeout(s)),
	}
	r.Parents = gatewayRefs(x.ParentRefs)
	pool := s.Names.InferencePool(e.ID)
	rule := inferencepool.Rule{Pool: pool}
	if canary {
		rule.Canary, rule.CanaryWeight = s.Names.InferencePool(resolve.CanaryID(e.ID)), e.Model.Canary.Weight
	}
	r.Rules = append(r.Rules, rule)
	r.Rules[0].PathPrefix = resolve.ModelPath(e)
	if e.Model.Name == rootHolder {
		r.Rules = append(r.Rules, rule)
	}
	return inferencepool.HTTPRoute(r)
}

// maxGatewayDuration is the longest duration Gateway API's pattern takes in
// one unit, ^([0-9]{1,5}(h|m|s|ms)){1,4}$: 99999h, about 11 years.
const maxGatewayDuration = 99999

// routeTimeout is the HTTPRoute's default request timeout: the longest
// start-up budget of the stack's engines, at least 10 minutes; for a model
// that scales to zero, a minute more than the time its picker holds a
// request for a cold start, so the picker's answer (the engine's, or 503 at
// the TTL) comes before the gateway's timeout.
func routeTimeout(s *resolve.Stack) string {
	longest := int64(600)
	for _, e := range s.Engines {
		if p := StartupProbe(e); p != nil {
			longest = max(longest, int64(p.PeriodSeconds)*int64(p.FailureThreshold)+int64(p.InitialDelaySeconds))
		}
		if ttl := PickerRequestTTL(e); ttl > 0 {
			longest = max(longest, ttl+RouteMarginSeconds)
		}
	}
	return GatewayDuration(longest)
}

// GatewayDuration writes seconds as a Gateway API duration, rounded up to
// the minute, or to the hour beyond 99999 minutes, and at most 99999h.
func GatewayDuration(seconds int64) string {
	minutes := (seconds + 59) / 60
	if minutes <= maxGatewayDuration {
		return fmt.Sprintf("%dm", minutes)
	}
	return fmt.Sprintf("%dh", min((minutes+59)/60, maxGatewayDuration))
}

// RouteMarginSeconds is what the HTTPRoute's timeout leaves, beyond a
// picker's request TTL, for the engine's answer.
const RouteMarginSeconds = 60
