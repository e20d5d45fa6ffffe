package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/e2e/proc"
	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
)

// TestEndpointPicker runs the Gateway API Inference Extension's endpoint
// picker (GAIE cmd/epp, pinned in ../tools/epp, built by `make epp`) against
// the real API server on what the stack library renders for a stack naming
// that release: model a's InferencePool, its picker's ServiceAccount, Role,
// RoleBinding, configuration and arguments, with fake engines serving
// vLLM's metrics in pods labelled as the rendered engine Deployments label
// theirs, and a small ext-proc client playing the gateway. Each negative
// scenario is the rendered objects with one change: a selector that misses
// the pods, a Role less some verbs, a KV-cache metric the engines do not
// export.
//
// The picker binds every interface (no flag takes an address), so the test
// runs in a private network namespace: the test binary starts itself again
// under `unshare --net` (root only), where it starts its own control plane on
// that namespace's loopback; the pods' IPs are 127.0.0.x there.
func TestEndpointPicker(t *testing.T) {
	if os.Getenv(eppInnerEnv) == "" {
		runIsolated(t)
		return
	}
	if err := checkIsolated(os.Getenv(eppInnerEnv)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	installInferencePoolCRD(ctx, t)

	// Fake engines, one per pod IP, serving /metrics on the pool's target
	// port. a1 is idle, a2 loaded: the default scorers (queue and KV cache
	// utilisation) must prefer a1 once the picker has scraped both. b1, a
	// pod of the stack's other model, is idler still: a pool whose
	// selector took it in would send model a's requests there.
	light := vllmMetrics("vllm:kv_cache_usage_perc", 0, 0.1)
	heavy := vllmMetrics("vllm:kv_cache_usage_perc", 40, 0.9)
	engines := map[string]*fakeEngine{
		"a1": startEngine(t, "127.0.0.11", light),
		"a2": startEngine(t, "127.0.0.12", heavy),
		"b1": startEngine(t, "127.0.0.21", vllmMetrics("vllm:kv_cache_usage_perc", 0, 0)),
		// vLLM up to 0.9.1 names the KV cache gauge vllm:gpu_cache_usage_perc
		// (GAIE.md §c); GAIE v1.3.0+ reads only vllm:kv_cache_usage_perc
		// unless its configuration names the other.
		"old1": startEngine(t, "127.0.0.31", vllmMetrics("vllm:gpu_cache_usage_perc", 10, 0.5)),
		"old2": startEngine(t, "127.0.0.32", vllmMetrics("vllm:gpu_cache_usage_perc", 30, 0.7)),
	}
	modelA := []string{engines["a1"].endpoint(), engines["a2"].endpoint()}
	both := map[string]*fakeEngine{"a1": engines["a1"], "a2": engines["a2"]}
	old := map[string]*fakeEngine{"old1": engines["old1"], "old2": engines["old2"]}

	t.Run("rendered", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-ok", "", nil)
		p := s.start(t)
		p.waitServing(t)
		// A pool whose selector matches no ready pod: 503 from the picker.
		if r := p.route(t, "a"); r.status != 503 || r.endpoint != "" {
			t.Errorf("model a before any pod is ready: got %s, want 503 and no endpoint", r)
		}
		// The pods come after the picker started: it must watch them.
		s.pods(t, "a", both)
		s.pods(t, "b", map[string]*fakeEngine{"b1": engines["b1"]})
		got := p.routeUntil(t, "a", func(r routed) bool { return r.endpoint == engines["a1"].endpoint() })
		t.Logf("model a routed to %s", got.endpoint)
		// It read both engines' gauges, and only model a's: averages
		// over the pool. Until it has scraped a2, a2 looks as idle as a1.
		p.waitMetric(t, "inference_pool_average_queue_size", 20)
		p.waitMetric(t, "inference_pool_average_kv_cache_utilization", 0.5)
		p.waitMetric(t, "inference_pool_ready_pods", 2)
		for i := range 10 {
			r := p.route(t, "a")
			if r.endpoint != engines["a1"].endpoint() {
				t.Errorf("request %d for model a: got %s, want the idle pod a1 %s of %v (not model b's b1 %s)", i, r, engines["a1"].endpoint(), modelA, engines["b1"].endpoint())
			}
		}
		// The picker does not filter by model: the pool is model a's
		// fleet, so a request naming model b still goes to a pod of it.
		if r := p.route(t, "b"); r.endpoint != engines["a1"].endpoint() {
			t.Errorf("model b sent to model a's pool: got %s, want a1 (the picker does not filter endpoints by model)", r)
		}
		// No model in the body: 400.
		if r := p.routeBody(t, `{"prompt":"hi"}`); r.status != 400 {
			t.Errorf("no model: got %s, want 400", r)
		}
		p.noForbidden(t)
	})

	t.Run("selector misses the pods", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-selector", "", func(r *rendered) {
			// One change: the model's name in the selector.
			if err := unstructured.SetNestedField(r.pool.Object, "c", "spec", "selector", "matchLabels", stack.LabelName); err != nil {
				t.Fatal(err)
			}
		})
		s.pods(t, "a", both)
		s.pods(t, "b", map[string]*fakeEngine{"b1": engines["b1"]})
		p := s.start(t)
		p.waitServing(t)
		p.never(t, "a", 5*time.Second, func(r routed) string {
			if r.status != 503 || !strings.Contains(r.body, "failed to find endpoint candidates") {
				return fmt.Sprintf("got %s, want 503 failed to find endpoint candidates", r)
			}
			return ""
		})
	})

	// Engines on vLLM 0.8.5 export only vllm:gpu_cache_usage_perc: the
	// stack names it in the picker's configuration (the core metrics
	// extractor's engine config vllm), and the picker reads it.
	t.Run("vLLM 0.8.5 KV cache metric", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-vllm085", oldVLLM, nil)
		if !strings.Contains(s.r.config, "kvUsageSpec: vllm:gpu_cache_usage_perc") {
			t.Fatalf("the picker's configuration for engines on %s does not name vllm:gpu_cache_usage_perc:\n%s", oldVLLM, s.r.config)
		}
		s.pods(t, "a", old)
		p := s.start(t)
		p.waitServing(t)
		p.routeUntil(t, "a", func(r routed) bool { return r.endpoint != "" })
		p.waitMetric(t, "inference_pool_average_queue_size", 20)
		p.waitMetric(t, "inference_pool_average_kv_cache_utilization", 0.6)
		p.noForbidden(t)
	})

	t.Run("metric name the picker does not read", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-oldmetric", oldVLLM, func(r *rendered) {
			// One change: the engine config's KV metric back to the
			// picker's default, which these engines do not export.
			c := strings.Replace(r.config, "kvUsageSpec: vllm:gpu_cache_usage_perc", "kvUsageSpec: vllm:kv_cache_usage_perc", 1)
			if c == r.config {
				t.Fatalf("the rendered configuration names no vllm:gpu_cache_usage_perc:\n%s", r.config)
			}
			r.config = c
		})
		s.pods(t, "a", old)
		p := s.start(t)
		p.waitServing(t)
		// It still routes (a missing gauge removes no endpoint) ...
		p.routeUntil(t, "a", func(r routed) bool { return r.endpoint != "" })
		// ... and reads the queue, but sees no KV cache utilisation.
		p.waitMetric(t, "inference_pool_average_queue_size", 20)
		p.holdMetric(t, "inference_pool_average_kv_cache_utilization", 0, 3*time.Second)
	})

	// Scale from zero (issue 32): with flow control on, a request for a
	// pool with no ready pod is queued (a pool without endpoints is
	// saturated) rather than refused, until a pod is ready or its TTL.
	//
	// The stack's model a scales to zero; its start-up budget, and so the
	// cold-start time, the picker's request TTL, is 6 s (probes.startup:
	// 6 probes a second apart) so that the test sees the TTL expire.
	t.Run("flow control holds a cold start", func(t *testing.T) {
		t.Parallel()
		const ttl = 6 * time.Second
		s := newPickerScenario(ctx, t, "epp-cold", "", nil, func(spec map[string]any) {
			spec["models"].([]any)[0].(map[string]any)["scaleToZero"] = map[string]any{
				"maxReplicas": 2, "prometheusAddress": "http://prometheus.monitoring:9090",
			}
			spec["probes"] = map[string]any{"startup": map[string]any{"periodSeconds": 1, "failureThreshold": 6}}
		})
		if want := "featureGates:\n- flowControl\nflowControl:\n  defaultRequestTTL: 6s\n"; !strings.HasSuffix(s.r.config, want) {
			t.Fatalf("the picker's configuration for a model that scales to zero does not end with %q:\n%s", want, s.r.config)
		}
		p := s.start(t)
		p.waitServing(t)
		coldStart(t, s, p, ttl, engines["a1"])
	})

	// Priorities (models[].inferenceObjectives): a request whose objective
	// header names the rendered objective of priority -1 is sheddable. The
	// pool has no ready pod, so it is saturated (§g): the picker refuses
	// that request at once with 429, while one of priority 10, or without
	// the header (priority 0), goes on and finds no candidate (503). The
	// picker watches the objectives (created after it started, one deleted)
	// with the rendered Role; without the objective, or without the Role's
	// rule for objectives (next scenario), the same request is not shed.
	withObjectives := func(spec map[string]any) {
		spec["models"].([]any)[0].(map[string]any)["inferenceObjectives"] = []any{
			map[string]any{"name": "interactive", "priority": 10}, map[string]any{"name": "batch", "priority": -1},
		}
	}
	const shed, noCandidate = "system saturated, sheddable request dropped", "failed to find endpoint candidates"
	t.Run("objectives", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-objectives", "", nil, withObjectives)
		batch, interactive := s.r.objectives["batch"].GetName(), s.r.objectives["interactive"].GetName()
		p := s.start(t)
		p.waitServing(t)
		// No objective yet: priority 0, not shed.
		if r := p.routeObjective(t, "a", batch); r.status != 503 || !strings.Contains(r.body, noCandidate) {
			t.Errorf("%s: %s before the objective exists: got %s, want 503 %s", objectiveHeader, batch, r, noCandidate)
		}
		s.createObjectives(t)
		var last routed
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			last = p.routeObjective(t, "a", batch)
			return last.status == 429, nil
		})
		if err != nil || !strings.Contains(last.body, shed) {
			t.Fatalf("%s: %s (priority -1), the pool saturated: got %s, want 429 %s", objectiveHeader, batch, last, shed)
		}
		t.Logf("%s: %s: %s", objectiveHeader, batch, last)
		for _, o := range []string{interactive, ""} {
			if r := p.routeObjective(t, "a", o); r.status != 503 || !strings.Contains(r.body, noCandidate) {
				t.Errorf("objective %q: got %s, want 503 %s (not shed)", o, r, noCandidate)
			}
		}
		p.noForbidden(t)
		// The objective deleted: priority 0 again.
		d, _ := client(t, cp.Config())
		if err := d.Resource(inferenceObjectives).Namespace(s.ns).Delete(context.Background(), batch, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			last = p.routeObjective(t, "a", batch)
			return last.status == 503, nil
		})
		if err != nil {
			t.Errorf("%s: %s after the objective was deleted: got %s, want 503", objectiveHeader, batch, last)
		}
	})

	// With the InferenceObjective CRD served, the picker's cache waits for
	// the objectives' informer before it starts any controller: a Role
	// without the rule for objectives leaves the picker without its pool
	// (never SERVING, so never Ready), and no request is shed.
	t.Run("role without inferenceobjectives", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-no-objectives", "", func(r *rendered) {
			r.role.Rules = withoutVerbs(t, r.role.Rules, []string{"inferenceobjectives/list", "inferenceobjectives/watch"})
		}, withObjectives)
		s.createObjectives(t)
		p := s.start(t)
		p.waitLog(t, `cannot list resource \"inferenceobjectives\"`)
		batch := s.r.objectives["batch"].GetName()
		n := 0
		var last routed
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			n++
			if last = p.routeObjective(t, "a", batch); last.status == 429 {
				t.Fatalf("request %d, %s: %s, without the Role's rule for objectives: got %s, want it not shed", n, objectiveHeader, batch, last)
			}
		}
		if p.serving() {
			t.Error("the picker is SERVING without the Role's rule for objectives")
		}
		t.Logf("%d requests with %s: %s in 5s, the last answered with %s; the picker not serving", n, objectiveHeader, batch, last)
	})

	// The Role: what each verb is for. The picker reads pods and its pool
	// through controller-runtime's cache, whose informers stream the initial
	// list over a watch (client-go v0.35's WatchListClient, on by default)
	// and fall back to list; nothing gets an object from the API server.
	// Each case is the rendered Role less some verbs.
	for _, c := range []struct {
		missing []string
		// routes: the picker still routes to the pods, created after it
		// started; forbidden: what its log must say (empty: nothing is
		// forbidden).
		routes    bool
		forbidden string
	}{
		{missing: []string{"pods/list"}, routes: true},
		{missing: []string{"inferencepools/list"}, routes: true},
		{missing: []string{"pods/watch"}, forbidden: `cannot watch resource \"pods\"`},
		{missing: []string{"inferencepools/watch"}, forbidden: `cannot watch resource \"inferencepools\"`},
		{missing: []string{"pods/list", "pods/watch"}, forbidden: `cannot list resource \"pods\"`},
		{missing: []string{"inferencepools/list", "inferencepools/watch"}, forbidden: `cannot list resource \"inferencepools\"`},
	} {
		name := "role without " + strings.Join(c.missing, ", ")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := "epp-no-" + strings.NewReplacer("/", "-", "inferencepools", "pools").Replace(strings.Join(c.missing, "-"))
			s := newPickerScenario(ctx, t, ns, "", func(r *rendered) { r.role.Rules = withoutVerbs(t, r.role.Rules, c.missing) })
			p := s.start(t)
			time.Sleep(2 * time.Second)
			s.pods(t, "a", both)
			switch {
			case c.routes:
				p.routeUntil(t, "a", func(r routed) bool { return r.endpoint != "" })
				p.noForbidden(t)
			case len(c.missing) == 2:
				p.never(t, "a", 5*time.Second, func(r routed) string {
					if r.endpoint != "" {
						return "routed to " + r.endpoint
					}
					return ""
				})
			}
			if c.forbidden != "" {
				p.waitLog(t, c.forbidden)
			}
		})
	}
}

// eppInnerEnv is set, to the outer network namespace, in the test binary
// that runs under unshare.
const eppInnerEnv = "E2E_EPP_OUTER_NETNS"

// eppBinary is $EPP or the `make epp` build.
func eppBinary() string {
	if b := os.Getenv("EPP"); b != "" {
		return b
	}
	b, _ := filepath.Abs("../.tools/bin/epp")
	return b
}

// runIsolated runs this test again in the test binary under `unshare --net`
// and reports its output.
func runIsolated(t *testing.T) {
	runIsolatedTest(t, "TestEndpointPicker", eppInnerEnv, "ip link set lo up")
}

// runIsolatedTest runs the test name again in the test binary under
// `unshare --net`, after the shell commands setup in that namespace, with
// innerEnv set to the outer namespace and env added, and reports its output.
func runIsolatedTest(t *testing.T, name, innerEnv, setup string, env ...string) {
	bin := eppBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the endpoint picker is not built (make epp, or EPP=<binary>): %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the endpoint picker binds every interface, so it runs in a private network namespace (unshare --net)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("needs unshare: %v", err)
	}
	netns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	deadline, ok := t.Deadline()
	timeout := 10 * time.Minute
	if ok {
		timeout = time.Until(deadline) - 10*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--net", "--kill-child", "--",
		"sh", "-c", setup+` && exec "$0" "$@"`,
		self, "-test.run=^"+name+"$", "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(append(os.Environ(), innerEnv+"="+netns, "EPP="+bin, "GOPROXY=off", "GOFLAGS=-mod=readonly"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("in a private network namespace (%s):\n%s", time.Since(start).Round(100*time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("%s under unshare --net: %v", name, err)
	}
	if !strings.Contains(out.String(), "--- PASS: "+name+" ") {
		t.Fatalf("%s did not pass under unshare --net", name)
	}
}

// checkIsolated refuses to run the picker outside a private network
// namespace whose interfaces are all loopback.
func checkIsolated(outer string) error {
	netns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	if netns == outer {
		return fmt.Errorf("network namespace %s is the outer one: run the test without %s", netns, eppInnerEnv)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 || i.Flags&net.FlagUp == 0 {
			return fmt.Errorf("interface %s is not loopback or not up (%v)", i.Name, i.Flags)
		}
	}
	return nil
}

// installInferencePoolCRD installs the InferencePool CRD of the GAIE release
// tools/epp pins (the picker's own), from its module zip. TestMain has
// installed the InferenceObjective CRD too (from e2e/crds, the same GAIE
// release), so every picker watches InferenceObjectives (it asks discovery
// at start) and its Role must grant them; no InferenceModelRewrite CRD.
func installInferencePoolCRD(ctx context.Context, t *testing.T) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/gateway-api-inference-extension")
	cmd.Dir = "../tools/epp"
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download in tools/epp: %v", err)
	}
	var m struct{ Version, Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" || m.Dir == "" {
		t.Fatalf("go mod download in tools/epp: %v %s", err, m.Error)
	}
	b, err := os.ReadFile(filepath.Join(m.Dir, "config", "crd", "bases", "inference.networking.k8s.io_inferencepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := yamlDocs(b)
	if err != nil || len(docs) != 1 {
		t.Fatalf("the InferencePool CRD of GAIE %s: %v (%d documents)", m.Version, err, len(docs))
	}
	if err := createCRD(ctx, docs[0], "e2e-admin"); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("the API server rejects the InferencePool CRD of GAIE %s: %v", m.Version, err)
	}
	mapper.Reset()
	t.Logf("installed inferencepools.inference.networking.k8s.io from sigs.k8s.io/gateway-api-inference-extension %s", m.Version)
}

// vllmMetrics is a vLLM /metrics page with the gauges the picker reads,
// the KV cache utilisation under the name kvName.
func vllmMetrics(kvName string, waiting int, kv float64) string {
	l := `{engine="0",model_name="m"}`
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running%[1]s 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting%[1]s %[2]d.0
# HELP %[3]s KV-cache usage. 1 means 100 percent usage.
# TYPE %[3]s gauge
%[3]s%[1]s %[4]g
# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="1",running_lora_adapters="",waiting_lora_adapters=""} 1.7e+09
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1.0
`, l, waiting, kvName, kv)
}

// engineTargetPort is the InferencePool's targetPort: every fake engine
// listens on it, on its own pod IP.
const engineTargetPort = 8000

// A fakeEngine serves one pod IP's /metrics page and counts its scrapes.
type fakeEngine struct {
	ip      string
	metrics string
	scrapes atomic.Int64
}

func (e *fakeEngine) endpoint() string { return net.JoinHostPort(e.ip, strconv.Itoa(engineTargetPort)) }

func startEngine(t *testing.T, ip, metrics string) *fakeEngine {
	t.Helper()
	e := &fakeEngine{ip: ip, metrics: metrics}
	l, err := net.Listen("tcp", e.endpoint())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		e.scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, e.metrics)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Logf("engine %s: unexpected %s %s", ip, r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return e
}

// pickerImage is the endpoint picker's release tools/epp builds: the
// stacks name it, so the library renders its flags, configuration and Role
// for the binary the test runs.
const pickerImage = "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"

// oldVLLM is a vLLM whose engines export only vllm:gpu_cache_usage_perc.
const oldVLLM = "vllm/vllm-openai:v0.8.5"

// rendered is what the stack library composes, as the function does, for
// the stack s of two models a and b routed through the inference extension
// in one namespace: model a's InferencePool and its picker's objects, and
// both models' engine pod templates.
type rendered struct {
	pool    *unstructured.Unstructured
	sa      *corev1.ServiceAccount
	role    *rbacv1.Role
	binding *rbacv1.RoleBinding
	config  string           // the picker's ConfigMap's config.yaml
	picker  corev1.Container // the picker Deployment's container
	engines map[string]corev1.PodTemplateSpec
	// objectives are model a's InferenceObjectives (its
	// inferenceObjectives), by their spec name.
	objectives map[string]*unstructured.Unstructured
	// objs is everything composed, by composition resource name; spec is
	// the stack's spec.
	objs map[string]runtime.Object
	spec map[string]any
}

// renderStack composes the stack in ns with its engines on vllmImage ("":
// the library's default) as a second reconcile does, every object of the
// first observed (the picker's RoleBinding waits for its Role).
func renderStack(t *testing.T, ns, vllmImage string, specChanges ...func(map[string]any)) *rendered {
	t.Helper()
	spec := map[string]any{
		"resources": map[string]any{"gpu": "1"},
		"inferenceExtension": map[string]any{
			"parentRefs": []any{map[string]any{"name": "inference-gateway"}},
			"picker":     map[string]any{"image": pickerImage},
		},
		"models": []any{
			map[string]any{"name": "a", "modelURL": "org/a"},
			map[string]any{"name": "b", "modelURL": "org/b"},
		},
	}
	if vllmImage != "" {
		spec["vllmConfig"] = map[string]any{"image": vllmImage}
	}
	for _, c := range specChanges {
		c(spec)
	}
	objs := composeTwice(t, ns, spec, &v1beta1.Input{})
	get := func(key string) runtime.Object {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("the stack composes no %s", key)
		}
		return o
	}
	r := &rendered{engines: map[string]corev1.PodTemplateSpec{}, objectives: map[string]*unstructured.Unstructured{}, objs: objs, spec: spec}
	for k, o := range objs {
		if name, ok := strings.CutPrefix(k, "engine-a-objective-"); ok {
			name, _, _ = strings.Cut(name, ".") // the key ends in the objective's API group
			u, isU := o.(*unstructured.Unstructured)
			if !isU {
				t.Fatalf("%s is %T, want an InferenceObjective", k, o)
			}
			r.objectives[name] = u
		}
	}
	var ok [6]bool
	r.pool, ok[0] = get("engine-a-inferencepool").(*unstructured.Unstructured)
	r.sa, ok[1] = get("engine-a-epp-serviceaccount").(*corev1.ServiceAccount)
	r.role, ok[2] = get("engine-a-epp-role").(*rbacv1.Role)
	r.binding, ok[3] = get("engine-a-epp-rolebinding").(*rbacv1.RoleBinding)
	cm, cmOK := get("engine-a-epp-config").(*corev1.ConfigMap)
	d, dOK := get("engine-a-epp").(*appsv1.Deployment)
	ok[4], ok[5] = cmOK, dOK
	if slices.Contains(ok[:], false) {
		t.Fatalf("the composed picker objects are not of the kinds expected: %v", ok)
	}
	r.config = cm.Data[inferencepool.ConfigKey]
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == inferencepool.ContainerName {
			r.picker = c
		}
	}
	if r.picker.Name == "" || r.config == "" {
		t.Fatalf("no picker container or configuration composed")
	}
	for _, m := range []string{"a", "b"} {
		e, ok := get("engine-" + m).(*appsv1.Deployment)
		if !ok {
			t.Fatalf("engine-%s is %T, want a Deployment", m, objs["engine-"+m])
		}
		r.engines[m] = e.Spec.Template
	}
	if ports, _, _ := unstructured.NestedSlice(r.pool.Object, "spec", "targetPorts"); len(ports) != 1 || ports[0].(map[string]any)["number"] != int64(engineTargetPort) {
		t.Fatalf("the pool's targetPorts are %v, the fake engines listen on %d", ports, engineTargetPort)
	}
	return r
}

// withoutVerbs is rules less the resource/verb pairs missing (a rule left
// without verbs is dropped).
func withoutVerbs(t *testing.T, rules []rbacv1.PolicyRule, missing []string) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	removed := 0
	for _, r := range rules {
		r = *r.DeepCopy()
		r.Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool {
			for _, res := range r.Resources {
				if slices.Contains(missing, res+"/"+v) {
					removed++
					return true
				}
			}
			return false
		})
		if len(r.Verbs) > 0 {
			out = append(out, r)
		}
	}
	if removed != len(missing) {
		t.Fatalf("the rendered Role does not grant all of %v: %v", missing, rules)
	}
	return out
}

// A pickerScenario is a namespace with the objects rendered for it, one
// change made: model a's InferencePool, its picker's ServiceAccount, Role
// and RoleBinding created.
type pickerScenario struct {
	ns    string
	r     *rendered
	token string
}

var inferencePools = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

// newPickerScenario renders the stack for ns (engines on vllmImage),
// changes what change changes (nil: nothing), and creates the pool and the
// picker's identity and RBAC.
func newPickerScenario(ctx context.Context, t *testing.T, ns, vllmImage string, change func(*rendered), specChanges ...func(map[string]any)) *pickerScenario {
	t.Helper()
	namespace(t, ns)
	r := renderStack(t, ns, vllmImage, specChanges...)
	if change != nil {
		change(r)
	}
	d, _ := client(t, cp.Config())
	if _, err := d.Resource(inferencePools).Namespace(ns).Create(ctx, r.pool, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("InferencePool: %v", err)
	}
	createIdentity(ctx, t, ns, r.sa, r.role, r.binding)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, r.sa.Name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	return &pickerScenario{ns: ns, r: r, token: tr.Status.Token}
}

// inferenceObjectives are the InferenceObjectives GAIE v1.5.0's picker
// watches (GAIE.md §h), validated on create by the CRD the suite installs
// from the pinned module.
var inferenceObjectives = schema.GroupVersionResource{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Resource: "inferenceobjectives"}

// createObjectives creates model a's rendered InferenceObjectives, strictly.
func (s *pickerScenario) createObjectives(t *testing.T) {
	t.Helper()
	if len(s.r.objectives) == 0 {
		t.Fatal("the stack renders no InferenceObjective for model a")
	}
	d, _ := client(t, cp.Config())
	for name, o := range s.r.objectives {
		if gv := inferenceObjectives.GroupVersion().String(); o.GetAPIVersion() != gv {
			t.Fatalf("InferenceObjective %s is %s, and the picker watches %s", name, o.GetAPIVersion(), gv)
		}
		if _, err := d.Resource(inferenceObjectives).Namespace(s.ns).Create(context.Background(), o, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("InferenceObjective %s: %v", name, err)
		}
	}
}

// pods creates a Running, Ready pod per engine (name → engine) of the
// model, labelled exactly as the rendered engine Deployment labels its
// pods, with the engine's IP as its pod IP.
func (s *pickerScenario) pods(t *testing.T, model string, engines map[string]*fakeEngine) {
	t.Helper()
	ctx := context.Background()
	tmpl := s.r.engines[model]
	c := tmpl.Spec.Containers[0]
	for name, e := range engines {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(tmpl.Labels)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: c.Name, Image: c.Image,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: engineTargetPort}},
			}}},
		}
		created, err := kube.CoreV1().Pods(s.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		created.Status = corev1.PodStatus{
			Phase:     corev1.PodRunning,
			PodIP:     e.ip,
			PodIPs:    []corev1.PodIP{{IP: e.ip}},
			StartTime: &now,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		}
		if _, err := kube.CoreV1().Pods(s.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s/%s status: %v", s.ns, name, err)
		}
	}
}

// A picker is a running endpoint picker.
type picker struct {
	p                         *proc.Process
	grpcPort, health, metrics int
	healthService             string // the rendered readiness probe's
}

// start runs the picker as its pod would: the rendered container's
// arguments and environment, the rendered configuration, as the rendered
// ServiceAccount. Only what this machine needs differs: the configuration's
// path (a file, not the ConfigMap's mount) and the ports (free ones of this
// namespace's loopback, since the scenarios' pickers share it); the
// environment's field references resolve to this namespace and a pod name.
func (s *pickerScenario) start(t *testing.T) *picker {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cp.Kubeconfig(s.token), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, inferencepool.ConfigKey)
	if err := os.WriteFile(config, []byte(s.r.config), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	pk := &picker{grpcPort: ports[0], health: ports[1], metrics: ports[2]}
	if pr := s.r.picker.ReadinessProbe; pr != nil && pr.GRPC != nil {
		pk.healthService = ptr.Deref(pr.GRPC.Service, "")
	}
	replace := map[string]string{
		"--config-file":      config,
		"--grpc-port":        strconv.Itoa(pk.grpcPort),
		"--grpc-health-port": strconv.Itoa(pk.health),
		"--metrics-port":     strconv.Itoa(pk.metrics),
	}
	var args []string
	for _, a := range s.r.picker.Args {
		name, _, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("rendered picker argument %q is not --flag=value", a)
		}
		if v, ok := replace[name]; ok {
			a = name + "=" + v
			delete(replace, name)
		}
		args = append(args, a)
	}
	if len(replace) > 0 {
		t.Fatalf("the rendered picker arguments %v lack %v", s.r.picker.Args, slices.Collect(maps.Keys(replace)))
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + dir, "PATH=/usr/bin:/bin"}
	for _, e := range s.r.picker.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
				v = s.ns
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
				v = s.r.sa.Name + "-0"
			default:
				t.Fatalf("the picker's environment variable %s comes from %v, which the test does not resolve", e.Name, f)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	t.Logf("epp %s", strings.Join(args, " "))
	p, err := proc.Start("epp-"+s.ns, eppBinary(), filepath.Join(dir, "epp.log"), dir, args, env)
	if err != nil {
		t.Fatal(err)
	}
	pk.p = p
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("----- last 60 lines of the picker's log -----\n%s", p.Tail(60))
		}
		if err := p.Stop(5 * time.Second); err != nil {
			t.Errorf("stopping the picker: %v", err)
		}
	})
	return pk
}

// freePorts returns n ports free on the loopback at once.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// serving reports whether the picker's gRPC health service says SERVING for
// the probes' service name now.
func (pk *picker) serving() bool {
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(pk.health), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: pk.healthService})
	return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// waitServing waits until the picker's gRPC health service (plaintext, as
// the rendered probes call it) says SERVING for the probes' service name
// (it does once it has the pool).
func (pk *picker) waitServing(t *testing.T) {
	t.Helper()
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(pk.health), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, msg := pk.p.Exited(); exited {
			return false, errors.New("the picker exited: " + msg)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: pk.healthService})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return false, nil
		}
		// SERVING does not mean the ext-proc server listens: with TLS it
		// starts once it has made its certificate, a second or two after
		// the health server (observed with GAIE v1.5.0).
		c, err := (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(pk.grpcPort)) //nolint:gosec // the picker's self-signed certificate
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	if err != nil {
		t.Fatalf("the picker is not serving: %v", err)
	}
}

// routed is what the picker answered for one request.
type routed struct {
	endpoint string // x-gateway-destination-endpoint
	metadata string // dynamic metadata envoy.lb/x-gateway-destination-endpoint
	status   int    // an immediate response's HTTP status
	body     string // its body
	err      error
}

func (r routed) String() string {
	switch {
	case r.err != nil:
		return "error " + r.err.Error()
	case r.status != 0:
		return fmt.Sprintf("immediate response %d %q", r.status, r.body)
	}
	return "endpoint " + r.endpoint
}

func (pk *picker) route(t *testing.T, model string) routed {
	return pk.routeBody(t, fmt.Sprintf(`{"model":%q,"prompt":"Say hi","max_tokens":1}`, model))
}

// routeObjective is route with the request header that names an
// InferenceObjective ("": none), as a client sends it through the Gateway.
func (pk *picker) routeObjective(t *testing.T, model, objective string) routed {
	t.Helper()
	var h [][2]string
	if objective != "" {
		h = append(h, [2]string{objectiveHeader, objective})
	}
	return pk.routeWithin(t, fmt.Sprintf(`{"model":%q,"prompt":"Say hi","max_tokens":1}`, model), 10*time.Second, h...)
}

// objectiveHeader is the header GAIE v1.5.0's picker reads an objective's
// name from (GAIE.md §h).
const objectiveHeader = "x-gateway-inference-objective"

// routeBody plays the gateway (GAIE.md §f): request headers, then the body
// with end_of_stream; the picker answers with the request headers' mutation
// naming the endpoint, or with an immediate response.
func (pk *picker) routeBody(t *testing.T, body string) routed {
	t.Helper()
	return pk.routeWithin(t, body, 10*time.Second)
}

// routeWithin is routeBody with the client's (the gateway's) timeout d and
// extra request headers.
func (pk *picker) routeWithin(t *testing.T, body string, d time.Duration, extra ...[2]string) routed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	// The rendered picker serves ext-proc over TLS (--secure-serving's
	// default) with a certificate it makes itself: the gateway does not
	// verify it, nor does the test.
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(pk.grpcPort),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}))) //nolint:gosec // the picker's self-signed certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
	if err != nil {
		return routed{err: err}
	}
	hdr := func(k, v string) *corev3.HeaderValue { return &corev3.HeaderValue{Key: k, RawValue: []byte(v)} }
	headers := []*corev3.HeaderValue{
		hdr(":method", "POST"), hdr(":path", "/v1/completions"), hdr(":authority", "gateway"),
		hdr("content-type", "application/json"), hdr("content-length", strconv.Itoa(len(body))),
	}
	for _, h := range extra {
		headers = append(headers, hdr(h[0], h[1]))
	}
	err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: headers}},
	}})
	if err == nil {
		err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true},
		}})
	}
	if err != nil {
		return routed{err: err}
	}
	resp, err := stream.Recv()
	if err != nil {
		return routed{err: err}
	}
	_ = stream.CloseSend()
	if ir := resp.GetImmediateResponse(); ir != nil {
		return routed{status: int(ir.GetStatus().GetCode()), body: string(ir.GetBody())}
	}
	rh := resp.GetRequestHeaders()
	if rh == nil {
		return routed{err: fmt.Errorf("first response is %T, want request headers", resp.GetResponse())}
	}
	var r routed
	for _, h := range rh.GetResponse().GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == "x-gateway-destination-endpoint" {
			r.endpoint = string(h.GetHeader().GetRawValue()) + h.GetHeader().GetValue()
		}
	}
	if lb := resp.GetDynamicMetadata().GetFields()["envoy.lb"]; lb != nil {
		r.metadata = lb.GetStructValue().GetFields()["x-gateway-destination-endpoint"].GetStringValue()
	}
	if r.metadata != r.endpoint {
		r.err = fmt.Errorf("header names %q, dynamic metadata %q", r.endpoint, r.metadata)
	}
	return r
}

// An answer is what the picker answered a request, and when.
type answer struct {
	r  routed
	at time.Time
}

// routeAsync sends the request body in the background, for at most d; the
// channel gets the answer.
func (pk *picker) routeAsync(t *testing.T, body string, d time.Duration) <-chan answer {
	done := make(chan answer, 1)
	go func() {
		r := pk.routeWithin(t, body, d)
		done <- answer{r, time.Now()}
	}()
	return done
}

// routeUntil sends requests until one satisfies ok (the picker scrapes the
// engines every 50ms and sees pods as their events come).
func (pk *picker) routeUntil(t *testing.T, model string, ok func(routed) bool) routed {
	t.Helper()
	var last routed
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = pk.route(t, model)
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("model %s: last answer %s", model, last)
	}
	return last
}

// never sends requests for d and fails on any answer bad describes.
func (pk *picker) never(t *testing.T, model string, d time.Duration, bad func(routed) string) {
	t.Helper()
	n := 0
	var last routed
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		n++
		last = pk.route(t, model)
		if msg := bad(last); msg != "" {
			t.Fatalf("request %d for model %s: %s", n, model, msg)
		}
	}
	t.Logf("%d requests for model %s in %s, the last answered with %s", n, model, d, last)
}

// metric reads one unlabelled-by-model gauge of the picker's own /metrics.
func (pk *picker) metric(name string) (float64, bool) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(pk.metrics) + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		return v, err == nil
	}
	return 0, false
}

// metricLines are the lines of the picker's /metrics that start with prefix.
func (pk *picker) metricLines(prefix string) []string {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(pk.metrics) + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out []string
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), prefix) {
			out = append(out, s.Text())
		}
	}
	return out
}

func (pk *picker) waitMetric(t *testing.T, name string, want float64) {
	t.Helper()
	var got float64
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		v, ok := pk.metric(name)
		got = v
		return ok && v > want-1e-6 && v < want+1e-6, nil
	})
	if err != nil {
		t.Errorf("the picker's %s: got %g, want %g", name, got, want)
	}
}

// holdMetric checks the gauge stays at want for d (once present).
func (pk *picker) holdMetric(t *testing.T, name string, want float64, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if v, ok := pk.metric(name); ok && (v < want-1e-6 || v > want+1e-6) {
			t.Errorf("the picker's %s: got %g, want %g", name, v, want)
			return
		}
	}
}

func (pk *picker) logContains(s string) bool {
	b, err := os.ReadFile(pk.p.LogPath())
	return err == nil && bytes.Contains(b, []byte(s))
}

// waitLog waits until the picker's log holds s.
func (pk *picker) waitLog(t *testing.T, s string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return pk.logContains(s), nil
	})
	if err != nil {
		t.Errorf("the picker's log does not say %s", s)
	}
}

// noForbidden fails if the API server refused the picker anything.
func (pk *picker) noForbidden(t *testing.T) {
	t.Helper()
	if pk.logContains("forbidden") {
		t.Errorf("the picker was refused something with the least RBAC:\n%s", pk.p.Tail(40))
	}
}

// coldStart checks the picker, its flow control on with a request TTL ttl,
// holds a request for model a while the pool has no ready pod: one that
// waits past its TTL gets the picker's refusal (503 "request timed out in
// queue"); one sent before the pod e is ready is answered with e's
// endpoint once it is. It reports the latency the queue adds once the pod
// is ready, against a request routed with the pod already ready.
func coldStart(t *testing.T, s *pickerScenario, p *picker, ttl time.Duration, e *fakeEngine) {
	t.Helper()
	body := `{"model":"a","prompt":"Say hi","max_tokens":1}`
	// No pod: held until the TTL (the expiry scan runs every second).
	start := time.Now()
	r := p.routeWithin(t, body, ttl+10*time.Second)
	waited := time.Since(start)
	t.Logf("no pod, TTL %s: %s after %s", ttl, r, waited.Round(time.Millisecond))
	if r.status != 503 || !strings.Contains(r.body, "request timed out in queue") {
		t.Errorf("a request with no pod ready for its TTL %s: got %s, want 503 request timed out in queue", ttl, r)
	}
	if waited < ttl || waited > ttl+3*time.Second {
		t.Errorf("the request was refused after %s, want its TTL %s (and the expiry scan's second)", waited, ttl)
	}
	// Held, then the pod becomes ready.
	sent := time.Now()
	done := p.routeAsync(t, body, ttl+10*time.Second)
	const hold = 2 * time.Second
	select {
	case a := <-done:
		t.Fatalf("a request with no pod ready was answered after %s: %s, want it held", a.at.Sub(sent), a.r)
	case <-time.After(hold):
	}
	// What wakes the model: the picker's queue gauge for this pool.
	pool := s.r.pool.GetName()
	queue := `inference_extension_flow_control_queue_size{`
	var line string
	for _, l := range p.metricLines(queue) {
		if strings.Contains(l, `inference_pool="`+pool+`"`) {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) == 0 || f[len(f)-1] != "1" {
		t.Errorf("while one request is held, the picker's %s...} for pool %s: got %q, want 1", queue, pool, line)
	}
	t.Logf("held: %s", line)
	s.pods(t, "a", map[string]*fakeEngine{"a1": e})
	ready := time.Now()
	var a answer
	select {
	case a = <-done:
	case <-time.After(ttl + 10*time.Second):
		t.Fatal("the held request was not answered")
	}
	if a.r.endpoint != e.endpoint() {
		t.Fatalf("the held request: got %s, want the pod made ready, %s", a.r, e.endpoint())
	}
	queued := a.at.Sub(ready)
	// The same request with the pod ready and scraped: no wait in the
	// queue but a dispatch cycle.
	var direct time.Duration
	const n = 10
	for range n {
		t0 := time.Now()
		if r := p.routeWithin(t, body, 10*time.Second); r.endpoint != e.endpoint() {
			t.Fatalf("with the pod ready: got %s, want %s", r, e.endpoint())
		}
		direct += time.Since(t0)
	}
	direct /= n
	t.Logf("held %s in all; answered %s after the pod was ready (its status written); a request with the pod ready takes %s: the queue adds %s once the pod is ready",
		a.at.Sub(sent).Round(time.Millisecond), queued.Round(time.Millisecond), direct.Round(time.Millisecond), (queued - direct).Round(time.Millisecond))
}
