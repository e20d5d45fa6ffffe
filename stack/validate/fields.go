package validate

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Allowed values, in the order error messages list them.
var (
	dtypes               = []string{"auto", "half", "float16", "bfloat16", "float", "float32"}
	deploymentStrategies = []string{"RollingUpdate", "Recreate"}
	pullPolicies         = []string{"Always", "IfNotPresent", "Never"}
	remoteSerdes         = []string{"naive", "cachegen"}
	routerTypes          = []string{"roundrobin", "session", "prefixaware", "kvaware"}
	accessModes          = []string{"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
	discoveryTypes       = []string{"pod-ip", resolve.DiscoveryServiceName}
	serviceTypes         = []string{"ClusterIP", "NodePort", "LoadBalancer"}
)

// ModelRevision is the XRD's pattern of model.revision: a Git revision
// that cannot be taken for a flag of vllm serve.
var ModelRevision = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// decimalFraction is the XRD's pattern of gpuMemoryUtilization, without the
// empty string: digits and one '.', nothing else.
var decimalFraction = regexp.MustCompile(`^([01](\.[0-9]+)?|\.[0-9]+)$`)

// maxConfigMapBytes is the most a ConfigMap's keys and values may hold
// together; the API server refuses a larger one.
const maxConfigMapBytes = 1 << 20

// labelMap checks label keys and values, in key order.
func labelMap(f *Findings, field string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			f.errorf("%s key %q is not a valid label key: %s", field, k, strings.Join(msgs, "; "))
		}
		if !names.IsLabelValue(m[k]) {
			f.errorf("%s[%s] %q is not a valid label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", field, k, m[k])
		}
	}
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// intOrPercent checks a count or percentage such as 1 or "25%".
func intOrPercent(f *Findings, field string, v *intstr.IntOrString) {
	if v == nil {
		return
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			f.errorf("%s %d is invalid: must be 0 or more", field, v.IntVal)
		}
		return
	}
	// Digits only: Atoi also reads "+5" and "-0", which the API server
	// and LWS's webhook refuse as percentages.
	n, ok := strings.CutSuffix(v.StrVal, "%")
	if x, err := strconv.Atoi(n); !ok || err != nil || x < 0 || x > 100 || strings.ContainsAny(n, "+-") {
		f.errorf("%s %q is invalid: use a number such as 1 or a percentage such as \"25%%\"", field, v.StrVal)
	}
}

func isZero(v *intstr.IntOrString) bool {
	return v != nil && (v.Type == intstr.Int && v.IntVal == 0 || v.Type == intstr.String && v.StrVal == "0%")
}

func onlyReadWriteOnce(s *v1alpha1.Storage) bool {
	if s.ExistingClaimName != "" {
		return false // the claim's modes are not ours to know
	}
	for _, m := range s.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return false
		}
	}
	return true
}

// isEnvVarName is Kubernetes' rule for environment variable names since 1.34:
// one or more printable ASCII characters other than '='.
func isEnvVarName(s string) bool {
	for _, c := range s {
		if c < ' ' || c > '~' || c == '=' {
			return false
		}
	}
	return s != ""
}

// isTokenChar reports whether c may appear in an HTTP header name (RFC 9110).
func isTokenChar(c rune) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

func oneOf(f *Findings, field, v string, allowed []string) {
	if v == "" {
		return
	}
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	f.errorf("%s %q is not supported: use one of %s", field, v, strings.Join(allowed, ", "))
}

func atLeast(f *Findings, field string, v *int32, minimum int32) {
	if v != nil && *v < minimum {
		if minimum == 0 {
			f.errorf("%s %d is invalid: must be 0 or more", field, *v)
			return
		}
		f.errorf("%s %d is invalid: must be at least %d", field, *v, minimum)
	}
}

// Quantity checks that v, at field, is a Kubernetes quantity (example
// says what one looks like).
func Quantity(f *Findings, field, v, example string) {
	if v == "" {
		return
	}
	q, err := resolve.ParseQuantity(v)
	switch {
	case errors.Is(err, resolve.ErrQuantityExponent):
		f.errorf("%s %s is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as %s", field, resolve.ClipQuote(v), example)
	case err != nil || q.Sign() < 0:
		f.errorf("%s %q is not a Kubernetes quantity: use a value such as %s", field, v, example)
	case !resolve.QuantityInRange(q):
		f.errorf("%s %s is too large: a Kubernetes quantity holds less than 8Ei; use a value such as %s", field, resolve.ClipQuote(v), example)
	}
}

func objectName(f *Findings, field, v string) {
	if v == "" {
		return
	}
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		f.errorf("%s %q is not a valid object name: %s", field, v, strings.Join(msgs, "; "))
	}
}

// requiredName checks the name of an object that must be named.
func requiredName(f *Findings, field, v string) {
	if v == "" {
		f.errorf("%s is required", field)
	}
	objectName(f, field, v)
}
