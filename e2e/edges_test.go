package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An edgeCase is a value of an optional block at the edge of what a user can
// write, and the layer that refuses it first, with its exact message (a
// pattern of matchMessage). A stack should be refused by the XRD (kubectl
// shows why) or by the function (a Fatal result: Crossplane applies nothing),
// not only when Crossplane applies a composed object: then the stack's other
// objects are applied, it runs half changed, and the error shows only in the
// XR's Synced condition.
type edgeCase struct {
	name   string
	mutate func(map[string]any)
	xrd    string // the API server refuses the XR
	fn     string // the function returns a Fatal result
	// applied: the API server or an upstream CRD refuses a composed object
	// ("<composition resource name>: <error>"; several joined by "; ").
	// Every such case is a gap between the XRD or the function and the
	// composed kinds, marked GAP: once the XRD or the function refuses the
	// value, its message moves to xrd or fn.
	applied string
}

var edgeCases = []edgeCase{
	{
		name:   "scrape interval in Prometheus' order",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1m30s"}}),
	},
	{
		// The XRD's pattern is the Prometheus Operator's Duration: y w d h
		// m s ms, in that order, each at most once.
		name:   "scrape interval out of Prometheus' order",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "30s1m"}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.monitoring.serviceMonitor.interval: Invalid value: "30s1m": spec.monitoring.serviceMonitor.interval in body should match '^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$'`,
	},
	{
		name:   "scrape interval with a repeated unit",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1m1m"}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.monitoring.serviceMonitor.interval: Invalid value: "1m1m": spec.monitoring.serviceMonitor.interval in body should match '^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$'`,
	},
	{
		// Prometheus takes days, and so does the XRD.
		name:   "scrape interval in days",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1d"}}),
	},
	{
		// The pattern allows 0s; the function refuses a zero interval.
		name:   "scrape interval of zero",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "0s"}}),
		fn:     `invalid ProductionStack: spec.monitoring.serviceMonitor.interval "0s" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`,
	},
	{
		// The XRD has the Gateway API's pattern of a listener name.
		name:   "HTTPRoute sectionName in upper case",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "sectionName": "HTTPS"}}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.routerConfig.httpRoute.parentRefs[0].sectionName: Invalid value: "HTTPS": spec.routerConfig.httpRoute.parentRefs[0].sectionName in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`,
	},
	{
		// The XRD has the pattern of a namespace name.
		name:   "HTTPRoute Gateway namespace in upper case",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "namespace": "Gateways"}}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.routerConfig.httpRoute.parentRefs[0].namespace: Invalid value: "Gateways": spec.routerConfig.httpRoute.parentRefs[0].namespace in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`,
	},
	{
		// The function checks paths as Kubernetes and the Gateway API do.
		name:   "HTTPRoute path with //",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1//chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.httpRoute.path "/v1//chat" must not contain "//"`,
	},
	{
		name:   "HTTPRoute path with a space",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1 chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.httpRoute.path "/v1 chat" has a character a URL path cannot hold unescaped: use letters, digits and -._~!$&'()*+,;=:@/, or %XX escapes`,
	},
	{
		name:   "HTTPRoute with a wildcard and an IP host name",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "hostnames": []any{"*.example.com", "10.0.0.1"}}),
	},
	{
		name:   "Ingress path with //",
		mutate: setSpec("routerConfig.ingress", map[string]any{"path": "/v1//chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.path "/v1//chat" must not contain "//"`,
	},
	{
		name:   "Ingress path ending in /.",
		mutate: setSpec("routerConfig.ingress", map[string]any{"path": "/v1/."}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.path "/v1/." must not end with "/."`,
	},
	{
		// An Ingress takes a wildcard host, and so does the function.
		name:   "Ingress wildcard host",
		mutate: setSpec("routerConfig.ingress", map[string]any{"host": "*.example.com"}),
	},
	{
		name:   "Ingress annotation key with a space",
		mutate: setSpec("routerConfig.ingress", map[string]any{"annotations": map[string]any{"nginx timeout": "600"}}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.annotations key "nginx timeout" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	},
	{
		name:   "NetworkPolicy ipBlock with a bad CIDR",
		mutate: setSpec("networkPolicy", map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/33"}}}}),
		fn:     `invalid ProductionStack: spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.0/33" is not a CIDR: use a network such as 10.0.0.0/16 or 2001:db8::/64`,
	},
	{
		name:   "PDB minAvailable above 100%",
		mutate: setSpec("podDisruptionBudget", map[string]any{"minAvailable": "150%"}),
		fn:     `invalid ProductionStack: spec.podDisruptionBudget.minAvailable "150%" is invalid: use a number such as 1 or a percentage such as "25%"`,
	},
	{
		name:   "KEDA threshold 0",
		mutate: setSpec("autoscaling", map[string]any{"maxReplicas": int64(2), "prometheusAddress": "http://prometheus:9090", "threshold": "0"}),
		fn:     `invalid ProductionStack: spec.autoscaling.threshold "0" is invalid: use a positive number such as "5"`,
	},
	{
		name:   "cache server with 0 replicas",
		mutate: setSpec("lmcacheConfig", map[string]any{"server": map[string]any{"replicas": int64(0)}}),
	},
}

// TestEdgeValues: for each edge value, the first layer that refuses the
// stack, and its message. Nothing is applied: the XR is created and every
// composed object applied with a server-side dry run.
func TestEdgeValues(t *testing.T) {
	ns := namespace(t, "edges")
	admin, _ := client(t, cp.Config())
	input := compositionInput(t, "../composition/composition.yaml")
	for _, tc := range edgeCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := readYAML(t, "../example/xr.yaml")
			setSpec("storage.enabled", false)(m)
			tc.mutate(m)
			xr := &unstructured.Unstructured{Object: m}
			xr.SetNamespace(ns)
			// The API server returns the XR with the schema's defaults.
			got, err := admin.Resource(xrGVR).Namespace(ns).Create(ctx, xr, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			if !refused(t, "the XRD", err, tc.xrd) || err != nil {
				return
			}
			rsp, fatal := tryRender(t, got.Object, input, nil)
			var fnErr error
			if fatal != "" {
				fnErr = stringError(fatal)
			}
			if !refused(t, "the function", fnErr, tc.fn) || fnErr != nil {
				return
			}
			var errs []string
			for _, k := range desiredKeys(rsp) {
				o := composed(got, k, rsp.GetDesired().GetResources()[k])
				if _, err := apply(ctx, t, admin, o, composedFieldOwner(got), true); err != nil {
					errs = append(errs, k+": "+err.Error())
				}
			}
			var applyErr error
			if len(errs) > 0 {
				applyErr = stringError(strings.Join(errs, "; "))
			}
			refused(t, "applying the composed objects", applyErr, tc.applied)
		})
	}
}

// refused checks that a layer refused with a message matching want, or
// accepted when want is empty. It reports whether it did as expected.
func refused(t *testing.T, layer string, err error, want string) bool {
	t.Helper()
	switch {
	case err == nil && want == "":
		return true
	case err == nil:
		t.Errorf("%s accepts it, want refused with\n  %s", layer, want)
	case want == "":
		t.Errorf("%s refuses it:\n  %v", layer, err)
	case !matchMessage(want, err.Error()):
		t.Errorf("%s refuses it with\n  %v\nwant\n  %s", layer, err, want)
	default:
		return true
	}
	return false
}

type stringError string

func (e stringError) Error() string { return string(e) }
