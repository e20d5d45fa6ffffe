package validate

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateCacheServer: the server is stack-wide, so only the top level may
// configure it.
func validateCacheServer(f *Findings, spec *v1alpha1.ProductionStackSpec) {
	for i, m := range spec.Models {
		if m.LMCacheConfig != nil && m.LMCacheConfig.Server != nil {
			f.errorf("spec.models[%d].lmcacheConfig.server: the cache server is shared by the stack: set it in spec.lmcacheConfig.server", i)
		}
	}
	if l := spec.LMCacheConfig; l != nil && l.Server != nil {
		oneOf(f, "spec.lmcacheConfig.server.serde", l.Server.Serde, remoteSerdes)
		atLeast(f, "spec.lmcacheConfig.server.replicas", l.Server.Replicas, 0)
		image(f, "spec.lmcacheConfig.server.image", l.Server.Image)
		if l.Server.Resources != nil {
			validateResourceRequirements(f, "spec.lmcacheConfig.server.resources", *l.Server.Resources)
		}
		validateScheduling(f, "spec.lmcacheConfig.server.scheduling", l.Server.Scheduling)
	}
}

// The checks below refuse what the API server or the upstream CRDs would
// refuse in a composed object: Crossplane would apply the stack's other
// objects, and the error would show only in the XR's Synced condition.

// validateIngress checks the router's Ingress as Kubernetes validates it.
func validateIngress(f *Findings, p string, in *v1alpha1.Ingress) {
	if in == nil {
		return
	}
	if in.Host != "" {
		// An Ingress takes a wildcard host, *.example.com.
		check := validation.IsDNS1123Subdomain
		if strings.HasPrefix(in.Host, "*.") {
			check = validation.IsWildcardDNS1123Subdomain
		}
		if msgs := check(in.Host); len(msgs) > 0 {
			f.errorf("%s.host %q is not a host name: %s", p, in.Host, strings.Join(msgs, "; "))
		} else if netutils.ParseIPSloppy(in.Host) != nil {
			// validateIngressRules (k8s.io/kubernetes
			// pkg/apis/networking/validation) refuses an IP address.
			f.errorf("%s.host %q is an IP address: an Ingress matches host names only; use a DNS name, or leave host unset to match every host", p, in.Host)
		}
	}
	objectName(f, p+".className", in.ClassName)
	// ValidateIngressCreate (k8s.io/kubernetes
	// pkg/apis/networking/validation): the deprecated class annotation must
	// match ingressClassName when both are set.
	if class, ok := in.Annotations[ingressClassAnnotation]; ok && in.ClassName != "" && class != in.ClassName {
		f.errorf("%s.annotations[%s] %q must match %s.className %q: remove the annotation, or give both the same class", p, ingressClassAnnotation, class, p, in.ClassName)
	}
	objectName(f, p+".tlsSecretName", in.TLSSecretName)
	annotationKeys(f, p+".annotations", in.Annotations)
	routePath(f, p+".path", in.Path, false)
}

// ingressClassAnnotation is the Ingress class annotation that
// ingressClassName replaced.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// validateHTTPRoute checks the router's HTTPRoute as the Gateway API's CRD
// does.
func validateHTTPRoute(f *Findings, p string, r *v1alpha1.HTTPRoute) {
	if r == nil || !resolve.On(true, r.Enabled) {
		return
	}
	if len(r.ParentRefs) == 0 {
		f.errorf("%s.parentRefs is required: name the Gateway the route attaches to", p)
	}
	// The CRD's rules on parentRefs: references to the same Gateway (name
	// and namespace as written) each need a sectionName, all different.
	firstRef := map[[3]string]int{}
	for i, ref := range r.ParentRefs {
		rp := fmt.Sprintf("%s.parentRefs[%d]", p, i)
		parent := [2]string{ref.Name, ref.Namespace}
		for j, other := range r.ParentRefs[:i] {
			if [2]string{other.Name, other.Namespace} == parent && (ref.SectionName == "" || other.SectionName == "") {
				f.errorf("%s refers to Gateway %q as parentRefs[%d] does: give each reference to the same Gateway its own sectionName", rp, ref.Name, j)
				break
			}
		}
		if j, ok := firstRef[[3]string{ref.Name, ref.Namespace, ref.SectionName}]; ok && ref.SectionName != "" {
			f.errorf("%s repeats parentRefs[%d]: give each reference to the same Gateway its own sectionName", rp, j)
		} else if !ok {
			firstRef[[3]string{ref.Name, ref.Namespace, ref.SectionName}] = i
		}
		if ref.Name == "" {
			f.errorf("%s.name is required: name the Gateway", rp)
		}
		if ref.Namespace != "" {
			if msgs := validation.IsDNS1123Label(ref.Namespace); len(msgs) > 0 {
				f.errorf("%s.namespace %q is not a namespace name: %s", rp, ref.Namespace, strings.Join(msgs, "; "))
			}
		}
		if ref.SectionName != "" {
			if msgs := validation.IsDNS1123Subdomain(ref.SectionName); len(msgs) > 0 {
				f.errorf("%s.sectionName %q is not a listener name: %s", rp, ref.SectionName, strings.Join(msgs, "; "))
			}
		}
	}
	for i, h := range r.Hostnames {
		if msgs := validation.IsDNS1123Subdomain(strings.TrimPrefix(h, "*.")); len(msgs) > 0 {
			f.errorf("%s.hostnames[%d] %q is not a host name: %s", p, i, h, strings.Join(msgs, "; "))
		} else if len(h) > validation.DNS1123SubdomainMaxLength {
			// The CRD's Hostname: at most 253 characters, with the "*.".
			f.errorf("%s.hostnames[%d] %s is too long: the Gateway API allows at most %d characters, a wildcard's \"*.\" included", p, i, resolve.ClipQuote(h), validation.DNS1123SubdomainMaxLength)
		}
	}
	routePath(f, p+".path", r.Path, true)
}

// httpRoutePathChars are the characters the Gateway API allows in a path.
var httpRoutePathChars = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// routePath checks a path prefix by the rules Kubernetes applies to Ingress
// paths of type Prefix, and the Gateway API to HTTPRoute PathPrefix matches.
func routePath(f *Findings, field, path string, httpRoute bool) {
	if path == "" {
		return
	}
	if !strings.HasPrefix(path, "/") {
		f.errorf("%s %q must start with /", field, path)
		return
	}
	for _, seq := range []string{"//", "/./", "/../", "%2f", "%2F"} {
		if strings.Contains(path, seq) {
			f.errorf("%s %q must not contain %q", field, path, seq)
			return
		}
	}
	for _, suffix := range []string{"/..", "/."} {
		if strings.HasSuffix(path, suffix) {
			f.errorf("%s %q must not end with %q", field, path, suffix)
			return
		}
	}
	if httpRoute && (strings.Contains(path, "#") || !httpRoutePathChars.MatchString(path)) {
		f.errorf("%s %q has a character a URL path cannot hold unescaped: use letters, digits and -._~!$&'()*+,;=:@/, or %%XX escapes", field, path)
	}
}

// validateNetworkPolicy checks the user's extra sources as Kubernetes
// validates NetworkPolicy peers.
func validateNetworkPolicy(f *Findings, np *v1alpha1.NetworkPolicy) {
	if np == nil || !resolve.On(true, np.Enabled) {
		return
	}
	for i, peer := range np.AllowFrom {
		p := fmt.Sprintf("spec.networkPolicy.allowFrom[%d]", i)
		if peer.IPBlock == nil && peer.PodSelector == nil && peer.NamespaceSelector == nil {
			f.errorf("%s: set podSelector, namespaceSelector or ipBlock", p)
			continue
		}
		for _, sel := range []struct {
			name string
			s    *metav1.LabelSelector
		}{{"podSelector", peer.PodSelector}, {"namespaceSelector", peer.NamespaceSelector}} {
			if sel.s == nil {
				continue
			}
			errs := metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, field.NewPath(p, sel.name))
			for _, e := range errs {
				f.errorf("%s", e.Error())
			}
		}
		if b := peer.IPBlock; b != nil {
			if peer.PodSelector != nil || peer.NamespaceSelector != nil {
				f.errorf("%s: ipBlock cannot be combined with podSelector or namespaceSelector", p)
			}
			cidr, err := netip.ParsePrefix(b.CIDR)
			if err != nil {
				f.errorf("%s.ipBlock.cidr %q is not a CIDR: use a network such as 10.0.0.0/16 or 2001:db8::/64", p, b.CIDR)
				continue
			}
			canonicalCIDR(f, p+".ipBlock.cidr", b.CIDR, cidr)
			for j, ex := range b.Except {
				e, err := netip.ParsePrefix(ex)
				if err != nil || e.Bits() <= cidr.Bits() || !cidr.Contains(e.Addr()) {
					f.errorf("%s.ipBlock.except[%d] %q must be a CIDR strictly inside %s", p, j, ex, b.CIDR)
					continue
				}
				canonicalCIDR(f, fmt.Sprintf("%s.ipBlock.except[%d]", p, j), ex, e)
			}
		}
	}
}

// canonicalCIDR refuses what Kubernetes' strict CIDR validation refuses
// (StrictIPCIDRValidation, on by default since 1.36;
// k8s.io/apimachinery/pkg/util/validation's parseCIDR): an IPv4-mapped IPv6
// network, or an address with bits set beyond the prefix length.
func canonicalCIDR(f *Findings, field, v string, c netip.Prefix) {
	switch {
	case c.Addr().Is4In6() && c.Bits() >= 96:
		f.errorf("%s %q is an IPv4-mapped IPv6 network: use the IPv4 network %s", field, v, netip.PrefixFrom(c.Addr().Unmap(), c.Bits()-96).Masked())
	case c.Addr().Is4In6():
		f.errorf("%s %q is an IPv4-mapped IPv6 network: use an IPv4 or IPv6 network such as 10.0.0.0/8 or 2001:db8::/64", field, v)
	case c.Masked() != c:
		f.errorf("%s %q has bits set beyond its prefix length: use %s", field, v, c.Masked())
	}
}

// promDuration is a Prometheus duration: units in this order, each at most
// once.
var promDuration = regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`)

// ValidateMonitoring checks the stack-wide monitoring block.
func ValidateMonitoring(f *Findings, m *v1alpha1.Monitoring) {
	if m == nil {
		return
	}
	validateDashboardAlerts(f, m)
	if m.ServiceMonitor == nil {
		return
	}
	const p = "spec.monitoring.serviceMonitor"
	labelMap(f, p+".labels", m.ServiceMonitor.Labels)
	ownedLabelKeys(f, p+".labels", m.ServiceMonitor.Labels)
	if iv := m.ServiceMonitor.Interval; iv != "" {
		promDurationField(f, p+".interval", iv, "30s or 1m30s", "a scrape interval such as 30s")
	}
}

// stackLabelKeys are the label keys the stack sets on every object it
// composes (labels), in the order messages list them.
var stackLabelKeys = []string{names.LabelName, names.LabelInstance, names.LabelComponent, names.LabelPartOf, names.LabelManagedBy}

// ownedLabelKeys refuses a label the stack sets itself on the monitoring
// objects: the stack's value wins, so the user's would be dropped without a
// word, and a dashboard whose labels were only that would lose the label
// Grafana's sidecar selects (grafana_dashboard, kept only when labels are
// unset).
func ownedLabelKeys(f *Findings, field string, m map[string]string) {
	for _, k := range stackLabelKeys {
		if _, ok := m[k]; ok {
			f.errorf("%s[%s] is a label the stack sets on its objects, and the stack's value would replace it: remove it (the stack owns %s)", field, k, strings.Join(stackLabelKeys, ", "))
		}
	}
}

// promDurationField checks a Prometheus duration that must not be 0;
// examples and use say what to write instead.
func promDurationField(f *Findings, field, v, examples, use string) {
	// A duration without a non-zero digit is 0: no scraping, no wait.
	if !promDuration.MatchString(v) || !strings.ContainsAny(v, "123456789") {
		f.errorf("%s %q is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as %s", field, v, examples)
	} else if _, ok := PromDurationNanos(v); !ok {
		f.errorf("%s %s is invalid: Prometheus reads durations of at most 292 years; use %s", field, resolve.ClipQuote(v), use)
	}
}

// validateDashboardAlerts checks monitoring.dashboard and
// monitoring.alerts: their queries select the series by the labels the
// ServiceMonitors' scrape gives them, so both need serviceMonitor.
func validateDashboardAlerts(f *Findings, m *v1alpha1.Monitoring) {
	scraped := resolve.On(m.ServiceMonitor != nil, m.ServiceMonitor.GetEnabled())
	if d := m.Dashboard; resolve.On(d != nil, d.GetEnabled()) {
		const p = "spec.monitoring.dashboard"
		if !scraped {
			f.errorf("%s needs spec.monitoring.serviceMonitor: the dashboard's queries select the stack's series by the namespace and service labels the ServiceMonitors' scrape gives them; set serviceMonitor: {} or turn the dashboard off", p)
		}
		labelMap(f, p+".labels", d.Labels)
		ownedLabelKeys(f, p+".labels", d.Labels)
		annotationKeys(f, p+".annotations", d.Annotations)
	}
	if a := m.Alerts; resolve.On(a != nil, a.GetEnabled()) {
		const p = "spec.monitoring.alerts"
		if !scraped {
			f.errorf("%s needs spec.monitoring.serviceMonitor: the alerts select the stack's series by the namespace and service labels the ServiceMonitors' scrape gives them; set serviceMonitor: {} or turn the alerts off", p)
		}
		labelMap(f, p+".labels", a.Labels)
		ownedLabelKeys(f, p+".labels", a.Labels)
		if a.For != "" {
			promDurationField(f, p+".for", a.For, "5m or 1h30m", "a duration such as 5m")
		}
		if w := a.WaitingRequests; w != nil && (*w < 0 || *w > 1000000) {
			f.errorf("%s.waitingRequests %d is invalid: use 0 to 1000000 waiting requests of one engine", p, *w)
		}
		if k := a.KVCacheUsagePercent; k != nil && (*k < 1 || *k > 100) {
			f.errorf("%s.kvCacheUsagePercent %d is invalid: use a percentage from 1 to 100", p, *k)
		}
	}
}

// promUnits are the nanoseconds of the units of a Prometheus duration.
var promUnits = map[string]uint64{
	"y": uint64(365 * 24 * time.Hour), "w": uint64(7 * 24 * time.Hour), "d": uint64(24 * time.Hour),
	"h": uint64(time.Hour), "m": uint64(time.Minute), "s": uint64(time.Second), "ms": uint64(time.Millisecond),
}

// PromDurationNanos adds up a duration that promDuration matches as
// Prometheus (model.ParseDuration) does, in nanoseconds, and reports whether
// it fits an int64: Prometheus refuses a longer one.
func PromDurationNanos(s string) (int64, bool) {
	var total uint64
	for _, m := range promPart.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseUint(m[1], 10, 64)
		unit := promUnits[m[2]]
		if err != nil || n > math.MaxInt64/unit {
			return 0, false
		}
		total += n * unit
		if total > math.MaxInt64 {
			return 0, false
		}
	}
	return int64(total), true
}

var promPart = regexp.MustCompile(`([0-9]+)(ms|[ywdhms])`)
