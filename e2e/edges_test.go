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
		// GAP: the XRD's pattern and time.ParseDuration take units in any
		// order; the Prometheus Operator's Duration pattern wants y w d h m s
		// ms, each at most once.
		name:    "scrape interval out of Prometheus' order",
		mutate:  setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "30s1m"}}),
		applied: "engines-servicemonitor: " + smInterval("test-stack-engines", "30s1m") + "; router-servicemonitor: " + smInterval("test-stack-router", "30s1m"),
	},
	{
		// GAP: as above.
		name:    "scrape interval with a repeated unit",
		mutate:  setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1m1m"}}),
		applied: "engines-servicemonitor: " + smInterval("test-stack-engines", "1m1m") + "; router-servicemonitor: " + smInterval("test-stack-router", "1m1m"),
	},
	{
		// Prometheus takes days; the XRD does not.
		name:   "scrape interval in days",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1d"}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.monitoring.serviceMonitor.interval: Invalid value: "1d": spec.monitoring.serviceMonitor.interval in body should match '^([0-9]+(ms|s|m|h))+$'`,
	},
	{
		// GAP: the XRD bounds only the length of sectionName.
		name:    "HTTPRoute sectionName in upper case",
		mutate:  setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "sectionName": "HTTPS"}}}),
		applied: `router-httproute: HTTPRoute.gateway.networking.k8s.io "test-stack-router-route" is invalid: spec.parentRefs[0].sectionName: Invalid value: "HTTPS": spec.parentRefs[0].sectionName in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`,
	},
	{
		// GAP: the XRD bounds only the length of namespace.
		name:    "HTTPRoute Gateway namespace in upper case",
		mutate:  setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "namespace": "Gateways"}}}),
		applied: `router-httproute: HTTPRoute.gateway.networking.k8s.io "test-stack-router-route" is invalid: spec.parentRefs[0].namespace: Invalid value: "Gateways": spec.parentRefs[0].namespace in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`,
	},
	{
		// GAP: the function checks only that the path starts with /.
		name:    "HTTPRoute path with //",
		mutate:  setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1//chat"}),
		applied: `router-httproute: HTTPRoute.gateway.networking.k8s.io "test-stack-router-route" is invalid: spec.rules[0].matches[0].path: Invalid value: must not contain '//' when type one of ['Exact', 'PathPrefix']`,
	},
	{
		// GAP: as above.
		name:    "HTTPRoute path with a space",
		mutate:  setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1 chat"}),
		applied: `router-httproute: HTTPRoute.gateway.networking.k8s.io "test-stack-router-route" is invalid: spec.rules[0].matches[0].path: Invalid value: must only contain valid characters (matching ^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) for types ['Exact', 'PathPrefix']`,
	},
	{
		name:   "HTTPRoute with a wildcard and an IP host name",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "hostnames": []any{"*.example.com", "10.0.0.1"}}),
	},
	{
		// GAP: the function checks only that the path starts with /.
		name:    "Ingress path with //",
		mutate:  setSpec("routerConfig.ingress", map[string]any{"path": "/v1//chat"}),
		applied: `router-ingress: Ingress.networking.k8s.io "test-stack-router-ingress" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "/v1//chat": must not contain '//'`,
	},
	{
		// GAP: as above.
		name:    "Ingress path ending in /.",
		mutate:  setSpec("routerConfig.ingress", map[string]any{"path": "/v1/."}),
		applied: `router-ingress: Ingress.networking.k8s.io "test-stack-router-ingress" is invalid: spec.rules[0].http.paths[0].path: Invalid value: "/v1/.": cannot end with '/.'`,
	},
	{
		// An Ingress takes a wildcard host; the function does not.
		name:   "Ingress wildcard host",
		mutate: setSpec("routerConfig.ingress", map[string]any{"host": "*.example.com"}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.host "*.example.com" is not a host name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
	},
	{
		// GAP: the function checks the router Service's annotation keys,
		// not the Ingress's.
		name:    "Ingress annotation key with a space",
		mutate:  setSpec("routerConfig.ingress", map[string]any{"annotations": map[string]any{"nginx timeout": "600"}}),
		applied: `router-ingress: Ingress.networking.k8s.io "test-stack-router-ingress" is invalid: metadata.annotations: Invalid value: "nginx timeout": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	},
	{
		// GAP: allowFrom passes through unchecked.
		name:    "NetworkPolicy ipBlock with a bad CIDR",
		mutate:  setSpec("networkPolicy", map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/33"}}}}),
		applied: `engines-networkpolicy: NetworkPolicy.networking.k8s.io "test-stack-engines" is invalid: spec.ingress[0].from[1].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`,
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

// smInterval is the upstream ServiceMonitor CRD's refusal of an interval.
func smInterval(name, interval string) string {
	return `ServiceMonitor.monitoring.coreos.com "` + name + `" is invalid: spec.endpoints[0].interval: Invalid value: "` + interval +
		`": spec.endpoints[0].interval in body should match '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'`
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
