package kubeapi

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// Rules of the kinds beyond pod templates that tools/kubediff found the
// function breaking: the test/internal/kubecheck oracle runs them on every
// composed object, so `go test ./...` holds the function to them too.

// IPBlock: ValidateIPBlock (pkg/apis/networking/validation), which checks
// cidr and each except with IsValidCIDRForLegacyField under the
// StrictIPCIDRValidation gate (on by default since Kubernetes 1.36): no
// leading zeros, no IPv4-mapped IPv6 address, no bits set beyond the prefix
// length; and each except strictly inside cidr.
func IPBlock(b networkingv1.IPBlock) []Problem {
	var ps problems
	if b.CIDR == "" {
		ps.add(".cidr", "is required")
		return ps.list
	}
	ps.fieldErrors(".cidr", validation.IsValidCIDRForLegacyField(field.NewPath("x"), b.CIDR, true, nil))
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return ps.list
	}
	for i, ex := range b.Except {
		fld := fmt.Sprintf(".except[%d]", i)
		ps.fieldErrors(fld, validation.IsValidCIDRForLegacyField(field.NewPath("x"), ex, true, nil))
		e, err := netip.ParsePrefix(ex)
		if err == nil && (e.Bits() <= cidr.Bits() || !cidr.Contains(e.Addr())) {
			ps.add(fld, "%s must be a strict subset of cidr %s", Quote(ex), b.CIDR)
		}
	}
	return ps.list
}

// IngressHost: validateIngressRules (pkg/apis/networking/validation): a
// DNS subdomain, or a wildcard one (*. and a subdomain), never an IP
// address.
func IngressHost(h string) []Problem {
	var ps problems
	if netutils.ParseIPSloppy(h) != nil {
		ps.add("", "%s must be a DNS name, not an IP address", Quote(h))
	}
	check := validation.IsDNS1123Subdomain
	if strings.Contains(h, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	if msgs := check(h); len(msgs) > 0 {
		ps.add("", "%s: %s", Quote(h), strings.Join(msgs, "; "))
	}
	return ps.list
}

// AccessModes: ValidatePersistentVolumeClaimSpec (pkg/apis/core/validation):
// at least one, each supported, and ReadWriteOncePod only alone.
func AccessModes(modes []corev1.PersistentVolumeAccessMode) []Problem {
	var ps problems
	if len(modes) == 0 {
		ps.add("", "is required")
	}
	rwop, other := false, false
	for i, m := range modes {
		switch m {
		case corev1.ReadWriteOncePod:
			rwop = true
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany:
			other = true
		default:
			ps.add(fmt.Sprintf("[%d]", i), "%s is not supported", Quote(string(m)))
		}
	}
	if rwop && other {
		ps.add("", "may not use ReadWriteOncePod with other access modes")
	}
	return ps.list
}

// IngressClass: ValidateIngressCreate (pkg/apis/networking/validation): the
// deprecated kubernetes.io/ingress.class annotation, when set with
// ingressClassName, must name the same class.
func IngressClass(annotations map[string]string, className *string) []Problem {
	var ps problems
	if v, ok := annotations["kubernetes.io/ingress.class"]; ok && className != nil && v != *className {
		ps.add("[kubernetes.io/ingress.class]", "%s must match ingressClassName %s when both are specified", Quote(v), Quote(*className))
	}
	return ps.list
}
