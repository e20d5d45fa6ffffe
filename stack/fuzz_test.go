package stack

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// FuzzQuantities: what the function's quantity checks accept, it can build
// objects of without a panic, and as the API server reads them.
//
//   - a size, CPU or memory quantity() accepts parses (MustParse does not
//     panic), is not negative, and reads back as itself;
//   - an LMCache buffer size gibibytes() accepts is a positive, finite
//     number of GiB whose bytes fit an int64 and are at least one, so the
//     emptyDir it sizes is positive, and LMCACHE_MAX_LOCAL_*_SIZE reads back
//     as the same number;
//   - gpus() gives a whole number of at least 0;
//   - gpuMemoryUtilization is accepted exactly when the XRD takes it: its
//     pattern and the CEL rule 0 < x <= 1.
func FuzzQuantities(f *testing.F) {
	for _, s := range []string{"4Gi", "4", "2.5", "0", "-1", "1e300", "1e-300", "NaN", "Inf", "0x1p-1", "16000Mi", "1E18", "9.3e18",
		"100000000000000000000000000000000000000000Ei", "0.0000000001", "500m", "1.5", "0.9", ".5", "1.0", "1e-1", "+0.5", " 1", "١"} {
		f.Add(s)
	}
	xrdPattern := regexp.MustCompile(`^([01](\.[0-9]+)?|\.[0-9]+)?$`)
	f.Fuzz(func(t *testing.T, v string) {
		var qf validate.Findings
		validate.Quantity(&qf, "q", v, "1")
		if len(qf.Errors) == 0 && v != "" {
			q := resource.MustParse(v)
			if q.Sign() < 0 {
				t.Errorf("quantity accepted %q, which is negative", v)
			}
			if again, err := resource.ParseQuantity(q.String()); err != nil || again.Cmp(q) != 0 {
				t.Errorf("quantity %q reads back as %q: %v", v, q.String(), err)
			}
		}
		if g, err := resolve.Gibibytes(v); err == nil {
			bytes := g * resolve.Gib
			if !(g > 0) || math.IsInf(g, 0) || !(bytes >= 1) || bytes >= math.MaxInt64 {
				t.Errorf("gibibytes(%q) = %v GiB: not a size from 1 byte to 8 EiB", v, g)
			}
			if n := int64(bytes); n <= 0 {
				t.Errorf("gibibytes(%q) makes an emptyDir of %d bytes", v, n)
			}
			if back, err := strconv.ParseFloat(build.GibString(v), 64); err != nil || back != g {
				t.Errorf("gibString(%q) = %q, which reads back as %v, want %v", v, build.GibString(v), back, g)
			}
		}
		if n, err := resolve.GPUs(v); err == nil && n < 0 {
			t.Errorf("gpus(%q) = %d", v, n)
		}
		var gf validate.Findings
		validate.ValidateBlocks(&gf, resolve.Layer{Path: "spec", Cfg: v1alpha1.EngineConfig{VLLMConfig: &v1alpha1.VLLMConfig{GPUMemoryUtilization: v}}})
		x, err := strconv.ParseFloat(v, 64)
		xrdTakes := v == "" || xrdPattern.MatchString(v) && err == nil && x > 0 && x <= 1
		if fnTakes := len(gf.Errors) == 0; fnTakes != xrdTakes {
			t.Errorf("gpuMemoryUtilization %q: the function takes it: %v, the XRD: %v (%v)", v, fnTakes, xrdTakes, gf.Errors)
		}
	})
}

var dnsLabelFragment = regexp.MustCompile(`^([a-z0-9]+(-[a-z0-9]+)*)?$`)

// FuzzNames: the name shortener and the DNS label maker. DNSLabel makes a
// fragment of lower case letters, digits and single dashes, and is
// idempotent; shorten keeps a name that fits and cuts one that does not to
// its limit, deterministically, different names to different results; and
// every object name and label of a stack named stack with a model named
// model is what Kubernetes takes.
func FuzzNames(f *testing.F) {
	long := strings.Repeat("a", 70)
	for _, s := range [][2]string{{"test-stack", "Llama-3.2-1B-Instruct"}, {"s", "m"}, {long + "." + long, long}, {"a", "K"}, {"x", "ǅungla"}, {"router", "router"}, {"1st", "--"}, {"stack", strings.Repeat("ab-", 100)}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, stackName, model string) {
		for _, s := range []string{stackName, model} {
			l := names.DNSLabel(s)
			if !dnsLabelFragment.MatchString(l) || names.DNSLabel(l) != l {
				t.Errorf("dnsLabel(%q) = %q: not an idempotent DNS label fragment", s, l)
			}
			for _, limit := range []int{names.MaxLabelLength, names.MaxSubdomainLength} {
				short := names.Shorten(s, limit)
				if len(short) > limit || (len(s) <= limit && short != s) || names.Shorten(s, limit) != short {
					t.Errorf("shorten(%q, %d) = %q", s, limit, short)
				}
				if l != "" && len(validation.IsDNS1123Subdomain(names.Shorten(l, limit))) > 0 {
					t.Errorf("shorten(%q, %d) of a DNS label is %q, not a DNS subdomain", l, limit, names.Shorten(l, limit))
				}
			}
		}
		if a, b := names.Shorten(stackName+long+long+long, names.MaxLabelLength), names.Shorten(model+long+long+long, names.MaxLabelLength); stackName != model && a == b {
			t.Errorf("shorten gives %q for two names", a)
		}
		// The names of a stack that passes validation.
		id := resolve.Identity{Name: stackName, Namespace: "llm"}
		var vf validate.Findings
		validate.ValidateStackName(&vf, id)
		m := names.DNSLabel(model)
		if len(vf.Errors) > 0 || m == "" {
			return
		}
		s := New(id, &v1alpha1.ProductionStackSpec{Model: &v1alpha1.Model{Name: model}}, nil)
		e := s.r.Engines[0]
		for _, n := range []string{s.r.Names.EngineDeployment(m), s.r.Names.StorageClaim(m), s.r.Names.ChatTemplates(m), s.r.Names.EnginePDB(m),
			s.r.Names.EngineScaledObject(m), s.r.Names.EngineHPA(m), s.r.Names.RouterHPA(), s.r.Names.RouterIngress(), s.r.Names.RouterHTTPRoute(),
			s.r.Names.EngineServiceMonitor(), s.r.Names.RouterServiceMonitor(), s.r.Names.CacheServerDeployment(), s.r.Names.RouterPDB(), s.r.Names.RouterServiceAccount(),
			s.r.Names.RouterRole(), s.r.Names.RouterRoleBinding(), s.r.Names.RouterDeployment()} {
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				t.Errorf("object name %q: %v", n, msgs)
			}
		}
		for _, n := range []string{s.r.Names.EngineService(m), s.r.Names.CacheServerService(), s.r.Names.RouterService()} {
			if msgs := validation.IsDNS1035Label(n); len(msgs) > 0 {
				t.Errorf("Service name %q: %v", n, msgs)
			}
		}
		// Pod volumes are DNS labels.
		for _, n := range []string{e.CacheVolume, e.TemplatesVolume} {
			if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
				t.Errorf("volume name %q: %v", n, msgs)
			}
		}
		for k, v := range build.EngineLabels(s.r.Name, e) {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				t.Errorf("label %s=%q: %v", k, v, msgs)
			}
		}
	})
}

// FuzzDurations: a ServiceMonitor interval the function accepts is one the
// XRD's pattern and Prometheus take (a duration of at most 292 years).
func FuzzDurations(f *testing.F) {
	for _, s := range []string{"30s", "1m30s", "0s", "5", "292y", "293y", "99999999999999999999y", "1y1w1d1h1m1s1ms", "1ms", "1h1h", "-5s", "2m", "1.5h", "", "0"} {
		f.Add(s)
	}
	xrdPattern := regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`)
	f.Fuzz(func(t *testing.T, s string) {
		var mf validate.Findings
		validate.ValidateMonitoring(&mf, &v1alpha1.Monitoring{ServiceMonitor: &v1alpha1.ServiceMonitor{Interval: s}})
		if len(mf.Errors) == 0 && s != "" {
			if !xrdPattern.MatchString(s) {
				t.Errorf("interval %q: accepted, and the XRD's pattern refuses it", s)
			}
			if n, ok := validate.PromDurationNanos(s); !ok || n <= 0 {
				t.Errorf("interval %q: accepted, and Prometheus reads %d ns (ok %v)", s, n, ok)
			}
		}
	})
}
