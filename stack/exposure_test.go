package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestIngress(t *testing.T) {
	rsp := mustRun(t, req(t, with("routerConfig.ingress", map[string]any{
		"className": "nginx", "host": "llm.example.com", "tlsSecretName": "llm-tls",
		"annotations": map[string]any{"nginx.ingress.kubernetes.io/proxy-read-timeout": "600"},
	}), nil, nil))
	ing := desired(t, rsp, "ingress-router", &networkingv1.Ingress{})
	want := networkingv1.IngressSpec{
		IngressClassName: ptr.To("nginx"),
		TLS:              []networkingv1.IngressTLS{{Hosts: []string{"llm.example.com"}, SecretName: "llm-tls"}},
		Rules: []networkingv1.IngressRule{{Host: "llm.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "s-router-service", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}},
	}
	if diff := cmp.Diff(want, ing.Spec); diff != "" {
		t.Errorf("Ingress (-want +got):\n%s", diff)
	}
	if ing.Name != "s-ingress-router" || ing.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] != "600" {
		t.Errorf("Ingress %s annotations %v", ing.Name, ing.Annotations)
	}
	off := mustRun(t, req(t, with("routerConfig.ingress", map[string]any{"enabled": false}), nil, nil))
	if _, ok := off.objects["ingress-router"]; ok {
		t.Error("a disabled Ingress must not be rendered")
	}
}

func TestHTTPRoute(t *testing.T) {
	rsp := mustRun(t, req(t, with("routerConfig.httpRoute", map[string]any{
		"parentRefs": []any{map[string]any{"name": "public", "namespace": "gateways", "sectionName": "https"}},
		"hostnames":  []any{"llm.example.com"},
	}, "routerConfig.service.port", 8080), nil, nil))
	got := objectMap(t, rsp, "httproute-router")
	want := map[string]any{
		"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public", "namespace": "gateways", "sectionName": "https"}},
		"hostnames":  []any{"llm.example.com"},
		"rules": []any{map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
			"backendRefs": []any{map[string]any{"name": "s-router-service", "port": float64(8080)}},
		}},
	}
	if diff := cmp.Diff(want, got["spec"]); diff != "" {
		t.Errorf("HTTPRoute spec (-want +got):\n%s", diff)
	}
	if got["apiVersion"] != "gateway.networking.k8s.io/v1" || got["kind"] != "HTTPRoute" {
		t.Errorf("HTTPRoute type %v %v", got["apiVersion"], got["kind"])
	}
}

func TestServiceMonitors(t *testing.T) {
	rsp := mustRun(t, req(t, with("monitoring.serviceMonitor", map[string]any{"interval": "15s", "labels": map[string]any{"release": "kube-prometheus-stack"}}), nil, nil))
	for key, want := range map[string]map[string]any{
		"engine-servicemonitor": {
			"selector":  map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine"}},
			"endpoints": []any{map[string]any{"port": "service-port", "path": "/metrics", "interval": "15s"}},
		},
		"servicemonitor-router": {
			"selector":  map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "router"}},
			"endpoints": []any{map[string]any{"port": "router-sport", "path": "/metrics", "interval": "15s"}},
		},
	} {
		got := objectMap(t, rsp, key)
		if diff := cmp.Diff(want, got["spec"]); diff != "" {
			t.Errorf("%s spec (-want +got):\n%s", key, diff)
		}
		labels := got["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["release"] != "kube-prometheus-stack" || labels["app.kubernetes.io/instance"] != "s" {
			t.Errorf("%s labels %v", key, labels)
		}
	}
}

func TestNetworkPolicy(t *testing.T) {
	rsp := mustRun(t, req(t, with("networkPolicy.allowFrom", []any{map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}},
	}}), nil, nil))
	np := desired(t, rsp, "engines-networkpolicy", &networkingv1.NetworkPolicy{})
	want := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "router"}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}},
			},
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8000))}},
		}},
	}
	if diff := cmp.Diff(want, np.Spec); diff != "" {
		t.Errorf("NetworkPolicy (-want +got):\n%s", diff)
	}
	if _, ok := mustRun(t, req(t, minimalXR(), nil, nil)).objects["engines-networkpolicy"]; ok {
		t.Error("the NetworkPolicy is off by default")
	}
}

func TestExposureValidation(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"IngressHost":           {xr: with("routerConfig.ingress.host", "LLM Example"), want: prefix + `spec.routerConfig.ingress.host "LLM Example" is not a host name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		"IngressPath":           {xr: with("routerConfig.ingress.path", "v1"), want: prefix + `spec.routerConfig.ingress.path "v1" must start with /`},
		"RouteNoParents":        {xr: with("routerConfig.httpRoute", map[string]any{"hostnames": []any{"a.example.com"}}), want: prefix + "spec.routerConfig.httpRoute.parentRefs is required: name the Gateway the route attaches to"},
		"MonitorInterval":       {xr: with("monitoring.serviceMonitor.interval", "often"), want: prefix + `spec.monitoring.serviceMonitor.interval "often" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`},
		"MonitorIntervalOrder":  {xr: with("monitoring.serviceMonitor.interval", "30s1m"), want: prefix + `spec.monitoring.serviceMonitor.interval "30s1m" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`},
		"MonitorIntervalZero":   {xr: with("monitoring.serviceMonitor.interval", "0s"), want: prefix + `spec.monitoring.serviceMonitor.interval "0s" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`},
		"IngressDoubleSlash":    {xr: with("routerConfig.ingress.path", "/v1//chat"), want: prefix + `spec.routerConfig.ingress.path "/v1//chat" must not contain "//"`},
		"IngressDotSuffix":      {xr: with("routerConfig.ingress.path", "/v1/."), want: prefix + `spec.routerConfig.ingress.path "/v1/." must not end with "/."`},
		"IngressAnnotationKey":  {xr: with("routerConfig.ingress.annotations", map[string]any{"nginx timeout": "600"}), want: prefix + `spec.routerConfig.ingress.annotations key "nginx timeout" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		"IngressBadWildcard":    {xr: with("routerConfig.ingress.host", "*.Example.com"), want: prefix + `spec.routerConfig.ingress.host "*.Example.com" is not a host name: a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		"RouteSectionName":      {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "sectionName": "HTTPS"}}}), want: prefix + `spec.routerConfig.httpRoute.parentRefs[0].sectionName "HTTPS" is not a listener name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		"RouteNamespace":        {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "namespace": "Gateways"}}}), want: prefix + `spec.routerConfig.httpRoute.parentRefs[0].namespace "Gateways" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		"RoutePathSpace":        {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1 chat"}), want: prefix + `spec.routerConfig.httpRoute.path "/v1 chat" has a character a URL path cannot hold unescaped: use letters, digits and -._~!$&'()*+,;=:@/, or %XX escapes`},
		"RoutePathEncodedSlash": {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1%2fchat"}), want: prefix + `spec.routerConfig.httpRoute.path "/v1%2fchat" must not contain "%2f"`},
		"NetworkPolicyCIDR":     {xr: with("networkPolicy.allowFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/33"}}}), want: prefix + `spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.0/33" is not a CIDR: use a network such as 10.0.0.0/16 or 2001:db8::/64`},
		"NetworkPolicyExcept":   {xr: with("networkPolicy.allowFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16", "except": []any{"10.1.0.0/24"}}}}), want: prefix + `spec.networkPolicy.allowFrom[0].ipBlock.except[0] "10.1.0.0/24" must be a CIDR strictly inside 10.0.0.0/16`},
		// Found by tools/kubediff: the API server or the CRD refuses the object.
		"IngressClassAnnotation":      {xr: with("routerConfig.ingress", map[string]any{"className": "nginx", "annotations": map[string]any{"kubernetes.io/ingress.class": "traefik"}}), want: prefix + `spec.routerConfig.ingress.annotations[kubernetes.io/ingress.class] "traefik" must match spec.routerConfig.ingress.className "nginx": remove the annotation, or give both the same class`},
		"IngressHostIP":               {xr: with("routerConfig.ingress.host", "10.0.0.1"), want: prefix + `spec.routerConfig.ingress.host "10.0.0.1" is an IP address: an Ingress matches host names only; use a DNS name, or leave host unset to match every host`},
		"RouteHostnameTooLong":        {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "hostnames": []any{"*." + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("a", 61)}}), want: prefix + `spec.routerConfig.httpRoute.hostnames[0] "*.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" (255 characters in all) is too long: the Gateway API allows at most 253 characters, a wildcard's "*." included`},
		"RouteSameGatewayTwice":       {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}, map[string]any{"name": "public", "sectionName": "https"}}}), want: prefix + `spec.routerConfig.httpRoute.parentRefs[1] refers to Gateway "public" as parentRefs[0] does: give each reference to the same Gateway its own sectionName`},
		"RouteSameListenerTwice":      {xr: with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "namespace": "gw", "sectionName": "https"}, map[string]any{"name": "public", "namespace": "gw", "sectionName": "https"}}}), want: prefix + `spec.routerConfig.httpRoute.parentRefs[1] repeats parentRefs[0]: give each reference to the same Gateway its own sectionName`},
		"NetworkPolicyCIDRHostBits":   {xr: with("networkPolicy.allowFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/8"}}}), want: prefix + `spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.1/8" has bits set beyond its prefix length: use 10.0.0.0/8`},
		"NetworkPolicyCIDRMapped":     {xr: with("networkPolicy.allowFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "::ffff:10.0.0.0/104"}}}), want: prefix + `spec.networkPolicy.allowFrom[0].ipBlock.cidr "::ffff:10.0.0.0/104" is an IPv4-mapped IPv6 network: use the IPv4 network 10.0.0.0/8`},
		"NetworkPolicyExceptHostBits": {xr: with("networkPolicy.allowFrom", []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/8", "except": []any{"10.1.2.3/16"}}}}), want: prefix + `spec.networkPolicy.allowFrom[0].ipBlock.except[0] "10.1.2.3/16" has bits set beyond its prefix length: use 10.1.0.0/16`},
		"NetworkPolicyEmptyPeer":      {xr: with("networkPolicy.allowFrom", []any{map[string]any{}}), want: prefix + `spec.networkPolicy.allowFrom[0]: set podSelector, namespaceSelector or ipBlock`},
		"NetworkPolicySelectorOp":     {xr: with("networkPolicy.allowFrom", []any{map[string]any{"podSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Within"}}}}}), want: prefix + `spec.networkPolicy.allowFrom[0].podSelector.matchExpressions[0].operator: Invalid value: "Within": not a valid selector operator`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, tc.xr, nil, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}
