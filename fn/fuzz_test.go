package fn

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	sdkresource "github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Fuzz targets of the parsers and decoders inside the function; test/fuzz
// fuzzes RunFunction as a whole. `go test ./fn` runs their seeds;
// hack/fuzz.sh fuzzes each for a bounded time.

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
		var qf findings
		quantity(&qf, "q", v, "1")
		if len(qf.errs) == 0 && v != "" {
			q := resource.MustParse(v)
			if q.Sign() < 0 {
				t.Errorf("quantity accepted %q, which is negative", v)
			}
			if again, err := resource.ParseQuantity(q.String()); err != nil || again.Cmp(q) != 0 {
				t.Errorf("quantity %q reads back as %q: %v", v, q.String(), err)
			}
		}
		if g, err := gibibytes(v); err == nil {
			bytes := g * gib
			if !(g > 0) || math.IsInf(g, 0) || !(bytes >= 1) || bytes >= math.MaxInt64 {
				t.Errorf("gibibytes(%q) = %v GiB: not a size from 1 byte to 8 EiB", v, g)
			}
			if n := int64(bytes); n <= 0 {
				t.Errorf("gibibytes(%q) makes an emptyDir of %d bytes", v, n)
			}
			if back, err := strconv.ParseFloat(gibString(v), 64); err != nil || back != g {
				t.Errorf("gibString(%q) = %q, which reads back as %v, want %v", v, gibString(v), back, g)
			}
		}
		if n, err := gpus(v); err == nil && n < 0 {
			t.Errorf("gpus(%q) = %d", v, n)
		}
		var gf findings
		validateBlocks(&gf, "spec", v1alpha1.EngineConfig{VLLMConfig: &v1alpha1.VLLMConfig{GPUMemoryUtilization: v}})
		x, err := strconv.ParseFloat(v, 64)
		xrdTakes := v == "" || xrdPattern.MatchString(v) && err == nil && x > 0 && x <= 1
		if fnTakes := len(gf.errs) == 0; fnTakes != xrdTakes {
			t.Errorf("gpuMemoryUtilization %q: the function takes it: %v, the XRD: %v (%v)", v, fnTakes, xrdTakes, gf.errs)
		}
	})
}

// FuzzDurations: a ServiceMonitor interval the function accepts is one the
// XRD's pattern and Prometheus take (a duration of at most 292 years); an
// Input ttl is either refused with a Fatal that names it or becomes the
// response's TTL as time.ParseDuration reads it.
func FuzzDurations(f *testing.F) {
	for _, s := range []string{"30s", "1m30s", "0s", "5", "292y", "293y", "99999999999999999999y", "1y1w1d1h1m1s1ms", "1ms", "1h1h", "-5s", "2m", "1.5h", "", "0"} {
		f.Add(s)
	}
	xrdPattern := regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`)
	f.Fuzz(func(t *testing.T, s string) {
		var mf findings
		validateMonitoring(&mf, &v1alpha1.Monitoring{ServiceMonitor: &v1alpha1.ServiceMonitor{Interval: s}})
		if len(mf.errs) == 0 && s != "" {
			if !xrdPattern.MatchString(s) {
				t.Errorf("interval %q: accepted, and the XRD's pattern refuses it", s)
			}
			if n, ok := promDurationNanos(s); !ok || n <= 0 {
				t.Errorf("interval %q: accepted, and Prometheus reads %d ns (ok %v)", s, n, ok)
			}
		}
		if len(s) > 64 || !utf8.ValidString(s) {
			return // the Input is JSON: valid UTF-8
		}
		in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": s}
		rsp := run(t, req(t, minimalXR(), in, nil))
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				if !strings.Contains(r.GetMessage(), "ttl") {
					t.Errorf("ttl %q: refused without naming ttl: %s", s, r.GetMessage())
				}
				return
			}
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || rsp.GetMeta().GetTtl().AsDuration() != d {
			t.Errorf("ttl %q: the response's TTL is %v; time.ParseDuration reads %v (%v)", s, rsp.GetMeta().GetTtl().AsDuration(), d, err)
		}
	})
}

var (
	dnsLabelFragment = regexp.MustCompile(`^([a-z0-9]+(-[a-z0-9]+)*)?$`)
)

// FuzzNames: the name shortener and the DNS label maker. dnsLabel makes a
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
			l := dnsLabel(s)
			if !dnsLabelFragment.MatchString(l) || dnsLabel(l) != l {
				t.Errorf("dnsLabel(%q) = %q: not an idempotent DNS label fragment", s, l)
			}
			for _, limit := range []int{maxLabelLength, maxSubdomainLength} {
				short := shorten(s, limit)
				if len(short) > limit || (len(s) <= limit && short != s) || shorten(s, limit) != short {
					t.Errorf("shorten(%q, %d) = %q", s, limit, short)
				}
				if l != "" && len(validation.IsDNS1123Subdomain(shorten(l, limit))) > 0 {
					t.Errorf("shorten(%q, %d) of a DNS label is %q, not a DNS subdomain", l, limit, shorten(l, limit))
				}
			}
		}
		if a, b := shorten(stackName+long+long+long, maxLabelLength), shorten(model+long+long+long, maxLabelLength); stackName != model && a == b {
			t.Errorf("shorten gives %q for two names", a)
		}
		// The names of a stack that passes validation.
		id := stackIdentity{name: stackName, namespace: "llm"}
		var vf findings
		validateStackName(&vf, id)
		m := dnsLabel(model)
		if len(vf.errs) > 0 || m == "" {
			return
		}
		s := newStack(id, &v1alpha1.ProductionStackSpec{Model: &v1alpha1.Model{Name: model}}, nil)
		e := s.engines[0]
		for _, n := range []string{s.names.engineDeployment(m), s.names.storageClaim(m), s.names.chatTemplates(m), s.names.enginePDB(m),
			s.names.engineScaledObject(m), s.names.engineHPA(m), s.names.routerHPA(), s.names.routerIngress(), s.names.routerHTTPRoute(),
			s.names.engineServiceMonitor(), s.names.routerServiceMonitor(), s.names.cacheServerDeployment(), s.names.routerPDB(), s.names.routerServiceAccount(),
			s.names.routerRole(), s.names.routerRoleBinding(), s.names.routerDeployment()} {
			if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
				t.Errorf("object name %q: %v", n, msgs)
			}
		}
		for _, n := range []string{s.names.engineService(m), s.names.cacheServerService(), s.names.routerService()} {
			if msgs := validation.IsDNS1035Label(n); len(msgs) > 0 {
				t.Errorf("Service name %q: %v", n, msgs)
			}
		}
		// Pod volumes are DNS labels.
		for _, n := range []string{e.cacheVolume, e.templatesVolume} {
			if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
				t.Errorf("volume name %q: %v", n, msgs)
			}
		}
		for k, v := range engineLabels(s.name, e) {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				t.Errorf("label %s=%q: %v", k, v, msgs)
			}
		}
	})
}

// FuzzObservedDecode: the decoder of observed state (decodeFields, the
// readiness and progress of a Deployment, the issues of pods) takes any
// object a cluster could send: no panic, the same answer twice, messages
// within their bounds.
func FuzzObservedDecode(f *testing.F) {
	d := observedDeployment("s-deployment-router", 1, counts(1, 0, 0), unavailable)
	pod := toMap(&corev1.Pod{})
	for _, p := range []corev1.Pod{unschedulablePod("p"), startingPod("q"), modelPod("r", scheduled(waiting("CrashLoopBackOff", "back-off")))} {
		pod = toMap(&p)
		b, _ := json.Marshal(pod)
		db, _ := json.Marshal(d)
		f.Add(db, b)
	}
	f.Add([]byte(`{"kind":"Deployment","status":{"replicas":"x","conditions":[{"type":1}]}}`), []byte(`{"status":{"conditions":7}}`))
	f.Add([]byte(`{"kind":"PersistentVolumeClaim","status":{"phase":{}}}`), []byte(`{"metadata":{"name":["a"]}}`))
	f.Add([]byte(`{"kind":"ScaledObject","status":{"conditions":[{"type":"Ready","status":"True"},"x",null]}}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, deployment, pod []byte) {
		var dm, pm map[string]any
		if json.Unmarshal(deployment, &dm) != nil || json.Unmarshal(pod, &pm) != nil {
			return
		}
		ds, err1 := structpb.NewStruct(dm)
		ps, err2 := structpb.NewStruct(pm)
		if err1 != nil || err2 != nil {
			return
		}
		answer := func() (sdkresource.Ready, string, []string) {
			cd := composed.New()
			cd.SetUnstructuredContent(decodeFields(ds, observedFields))
			o := sdkresource.ObservedComposed{Resource: cd}
			pods := podSet{ps, ps, proto.Clone(ps).(*structpb.Struct)}
			_, p := deploymentProgress(o, "d", pods)
			reason, lines := podIssues(pods.decode())
			return ready(o), p.reason + ": " + p.message, append(lines, reason)
		}
		r1, m1, l1 := answer()
		r2, m2, l2 := answer()
		if r1 != r2 || m1 != m2 || strings.Join(l1, "\n") != strings.Join(l2, "\n") {
			t.Errorf("two decodes of the same objects differ")
		}
		if len(m1) > 2*maxMessageLength {
			t.Errorf("a progress message of %d bytes", len(m1))
		}
		if len(l1) > maxPodIssues+2 {
			t.Errorf("%d pod issue lines", len(l1))
		}
		for _, l := range l1 {
			if len(l) > maxPodsNamed*(maxPodNameLength+2)+maxDetailLength*4+64 {
				t.Errorf("a pod issue line of %d bytes", len(l))
			}
		}
	})
}

// FuzzComposedDecoder: the decoder composedStruct uses on the JSON that
// encoding/json writes gives the same value encoding/json reads, for any
// JSON value.
func FuzzComposedDecoder(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":[1,-2.5e10,true,null,{}]}`, `"\u003c\u2028\\\"x"`, `{"emptyDir":{},"x":{"y":null}}`, `[[],[{}]]`, `1e308`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		m, err := json.Marshal(v)
		if err != nil {
			return
		}
		want, err := structpb.NewValue(v)
		if err != nil {
			return // not valid UTF-8: encoding/json replaced it; no Struct holds it
		}
		d := decoder{data: string(m)}
		got, err := d.value(false)
		if err != nil || d.pos != len(m) {
			t.Fatalf("decoding %s: %v (at %d of %d)", m, err, d.pos, len(m))
		}
		if !proto.Equal(got, want) {
			t.Errorf("decoding %s: got %v, want %v", m, got, want)
		}
	})
}
