package build

import (
	"cmp"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

const defaultScrapeInterval = "30s"

// RouterIngress exposes the router's Service through an Ingress controller.
func routerIngress(s *resolve.Stack, in *v1alpha1.Ingress) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: withAnnotations(s.Meta(s.Names.RouterIngress(), routerLabels(s)), in.Annotations),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: in.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     resolve.Or(in.Path, "/"),
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: s.Names.RouterService(),
							Port: networkingv1.ServiceBackendPort{Number: s.Router.ServicePort},
						}},
					}},
				}},
			}},
		},
	}
	if in.ClassName != "" {
		ing.Spec.IngressClassName = ptr.To(in.ClassName)
	}
	if in.TLSSecretName != "" {
		tls := networkingv1.IngressTLS{SecretName: in.TLSSecretName}
		if in.Host != "" {
			tls.Hosts = []string{in.Host}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{tls}
	}
	return ing
}

// RouterHTTPRoute attaches the router's Service to Gateways. Gateway API
// types are CRDs, so the object is built unstructured.
func routerHTTPRoute(s *resolve.Stack, r *v1alpha1.HTTPRoute) *unstructured.Unstructured {
	parents := inferencepool.GatewayRefs(gatewayRefs(r.ParentRefs))
	spec := map[string]any{
		"parentRefs": parents,
		"rules": []any{map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": resolve.Or(r.Path, "/")}}},
			"backendRefs": []any{map[string]any{"name": s.Names.RouterService(), "port": int64(s.Router.ServicePort)}},
		}},
	}
	if len(r.Hostnames) > 0 {
		hosts := make([]any, len(r.Hostnames))
		for i, h := range r.Hostnames {
			hosts[i] = h
		}
		spec["hostnames"] = hosts
	}
	return crd(s, "gateway.networking.k8s.io/v1", "HTTPRoute", s.Names.RouterHTTPRoute(), routerLabels(s), spec)
}

// gatewayRefs are the spec's parentRefs as the builders take them.
func gatewayRefs(refs []v1alpha1.ParentRef) []inferencepool.ParentRef {
	out := make([]inferencepool.ParentRef, 0, len(refs))
	for _, p := range refs {
		out = append(out, inferencepool.ParentRef{Name: p.Name, Namespace: p.Namespace, SectionName: p.SectionName})
	}
	return out
}

// serviceMonitor scrapes /metrics of the Services of one component: vLLM
// serves its metrics on the same port as the API.
func serviceMonitor(s *resolve.Stack, name, component, port string, m *v1alpha1.ServiceMonitor) *unstructured.Unstructured {
	l := names.Labels(s.Name, component, component)
	if component == names.ComponentEngine {
		// It scrapes every model's engines: no single model names it.
		delete(l, names.LabelName)
	}
	for k, v := range m.Labels {
		if _, own := l[k]; !own {
			l[k] = v
		}
	}
	spec := map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{names.LabelInstance: s.Name, names.LabelComponent: component}},
		"endpoints": []any{map[string]any{
			"port": port, "path": "/metrics", "interval": resolve.Or(m.Interval, defaultScrapeInterval),
		}},
	}
	return crd(s, "monitoring.coreos.com/v1", "ServiceMonitor", name, l, spec)
}

// EngineNetworkPolicy lets only the stack's router, and the sources the user
// names (e.g. Prometheus), reach the engines' port. Engines are otherwise
// open to every pod of the cluster: vLLM has no authentication by default.
func engineNetworkPolicy(s *resolve.Stack, np *v1alpha1.NetworkPolicy) *networkingv1.NetworkPolicy {
	from := append([]networkingv1.NetworkPolicyPeer{{
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{names.LabelInstance: s.Name, names.LabelComponent: names.ComponentRouter}},
	}}, np.AllowFrom...)
	l := names.Labels(s.Name, names.ComponentEngine, names.ComponentEngine)
	delete(l, names.LabelName)
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: s.Meta(s.Names.EngineNetworkPolicy(), l),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: enginePodsSelector(s),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     engineIngress(s, from),
		},
	}
}

// engineIngress: the API port from the router and the named sources; with a
// disaggregated model every port from the stack's engines; with kvaware
// routing also the LMCache workers' ports, from the router only,
// where the LMCache controller calls back: each model's range, one port per
// tensor-parallel worker.
func engineIngress(s *resolve.Stack, from []networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyIngressRule {
	rules := []networkingv1.NetworkPolicyIngressRule{{
		From:  from,
		Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(names.EnginePort))}},
	}}
	if resolve.MultiNodeOn(s) {
		// The pods of a multi-node model's group reach each other on every
		// port: torch.distributed's store on the leader (29501), then NCCL
		// and vLLM's message queues, whose ports are not fixed.
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: ptr.To(enginePodsSelector(s))}}})
	}
	if _, _, ok := resolve.DisaggregatedLabels(s); ok {
		// The decode engines pull the KV cache from the prefill pods: the
		// NIXL side channel, then UCX's transports, whose TCP ports are not
		// fixed. The stack's engines reach each other on every port.
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{names.LabelInstance: s.Name, names.LabelComponent: names.ComponentEngine}},
		}}})
	}
	var ranges [][2]int32
	for _, e := range s.Engines {
		if e.KVAware {
			first, last := resolve.WorkerPorts(e) // validated: within int32
			ranges = append(ranges, [2]int32{int32(first), int32(last)})
		}
	}
	if len(ranges) == 0 {
		return rules
	}
	var ports []networkingv1.NetworkPolicyPort
	for _, r := range mergeRanges(ranges) {
		p := networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(r[0]))}
		if r[1] > r[0] {
			p.EndPort = ptr.To(r[1])
		}
		ports = append(ports, p)
	}
	return append(rules, networkingv1.NetworkPolicyIngressRule{From: from[:1], Ports: ports})
}

// mergeRanges sorts port ranges and joins the ones that overlap or touch.
func mergeRanges(ranges [][2]int32) [][2]int32 {
	slices.SortFunc(ranges, func(a, b [2]int32) int { return cmp.Compare(a[0], b[0]) })
	out := [][2]int32{ranges[0]}
	for _, r := range ranges[1:] {
		last := &out[len(out)-1]
		if r[0] <= last[1]+1 {
			last[1] = max(last[1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}
