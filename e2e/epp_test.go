package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// TestEndpointPicker runs the Gateway API Inference Extension's endpoint
// picker (GAIE cmd/epp, pinned in ../tools/epp, built by `make epp`) against
// the real API server, with the least RBAC the facts name
// (stack/testdata/upstream/GAIE.md §d), fake engines serving vLLM's metrics,
// and a small ext-proc client playing the gateway.
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
	// utilisation) must prefer a1 once the picker has scraped both.
	light := vllmMetrics("vllm:kv_cache_usage_perc", 0, 0.1)
	heavy := vllmMetrics("vllm:kv_cache_usage_perc", 40, 0.9)
	engines := map[string]*fakeEngine{
		"a1": startEngine(t, "127.0.0.11", light),
		"a2": startEngine(t, "127.0.0.12", heavy),
		"b1": startEngine(t, "127.0.0.21", light),
		// vLLM up to 0.9.1 names the KV cache gauge vllm:gpu_cache_usage_perc
		// (GAIE.md §c); GAIE v1.3.0+ reads only vllm:kv_cache_usage_perc.
		"old1": startEngine(t, "127.0.0.31", vllmMetrics("vllm:gpu_cache_usage_perc", 10, 0.5)),
		"old2": startEngine(t, "127.0.0.32", vllmMetrics("vllm:gpu_cache_usage_perc", 30, 0.7)),
	}
	modelA := []string{engines["a1"].endpoint(), engines["a2"].endpoint()}

	t.Run("least privilege", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-ok", map[string]string{"model": "a"}, eppRules())
		p := s.start(t)
		p.waitServing(t)
		// A pool whose selector matches no ready pod: 503 from the picker.
		if r := p.route(t, "a"); r.status != 503 || r.endpoint != "" {
			t.Errorf("model a before any pod is ready: got %s, want 503 and no endpoint", r)
		}
		// The pods come after the picker started: it must watch them.
		s.pods(t, map[string]*fakeEngine{"a1": engines["a1"], "a2": engines["a2"], "b1": engines["b1"]})
		got := p.routeUntil(t, "a", func(r routed) bool { return r.endpoint == engines["a1"].endpoint() })
		t.Logf("model a routed to %s", got.endpoint)
		for i := range 10 {
			r := p.route(t, "a")
			if r.endpoint != engines["a1"].endpoint() {
				t.Errorf("request %d for model a: got %s, want the idle pod a1 %s of %v", i, r, engines["a1"].endpoint(), modelA)
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
		// It read both engines' gauges: averages over the pool.
		p.waitMetric(t, "inference_pool_average_queue_size", 20)
		p.waitMetric(t, "inference_pool_average_kv_cache_utilization", 0.5)
		p.waitMetric(t, "inference_pool_ready_pods", 2)
		p.noForbidden(t)
	})

	t.Run("selector misses the pods", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-selector", map[string]string{"model": "c"}, eppRules())
		s.pods(t, map[string]*fakeEngine{"a1": engines["a1"], "a2": engines["a2"], "b1": engines["b1"]})
		p := s.start(t)
		p.waitServing(t)
		p.never(t, "a", 5*time.Second, func(r routed) string {
			if r.status != 503 || !strings.Contains(r.body, "failed to find endpoint candidates") {
				return fmt.Sprintf("got %s, want 503 failed to find endpoint candidates", r)
			}
			return ""
		})
	})

	t.Run("metric name the picker does not read", func(t *testing.T) {
		t.Parallel()
		s := newPickerScenario(ctx, t, "epp-oldmetric", map[string]string{"model": "a"}, eppRules())
		s.pods(t, map[string]*fakeEngine{"old1": engines["old1"], "old2": engines["old2"]})
		p := s.start(t)
		p.waitServing(t)
		// It still routes (a missing gauge removes no endpoint) ...
		p.routeUntil(t, "a", func(r routed) bool { return r.endpoint != "" })
		// ... and reads the queue, but sees no KV cache utilisation.
		p.waitMetric(t, "inference_pool_average_queue_size", 20)
		p.holdMetric(t, "inference_pool_average_kv_cache_utilization", 0, 3*time.Second)
	})

	// The Role: what each verb is for. The picker reads pods and its pool
	// through controller-runtime's cache, whose informers stream the initial
	// list over a watch (client-go v0.35's WatchListClient, on by default)
	// and fall back to list; nothing gets an object from the API server.
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
			s := newPickerScenario(ctx, t, ns, map[string]string{"model": "a"}, eppRules(c.missing...))
			p := s.start(t)
			time.Sleep(2 * time.Second)
			s.pods(t, map[string]*fakeEngine{"a1": engines["a1"], "a2": engines["a2"]})
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
		"sh", "-c", `ip link set lo up && exec "$0" "$@"`,
		self, "-test.run=^TestEndpointPicker$", "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), eppInnerEnv+"="+netns, "EPP="+bin, "GOPROXY=off", "GOFLAGS=-mod=readonly")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	t.Logf("in a private network namespace (%s):\n%s", time.Since(start).Round(100*time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("TestEndpointPicker under unshare --net: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestEndpointPicker ") {
		t.Fatal("TestEndpointPicker did not pass under unshare --net")
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
// tools/epp pins (the picker's own), from its module zip. Only that CRD: the
// picker then neither watches nor needs InferenceObjectives or
// InferenceModelRewrites (it asks discovery).
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

// eppRules are the Role's rules the picker needs (GAIE.md §d: pods and
// inferencepools list and watch in the pool's namespace; the chart's get is
// never used), less the resource/verb pairs missing.
func eppRules(missing ...string) []rbacv1.PolicyRule {
	verbs := func(resource string) []string {
		var vs []string
		for _, v := range []string{"list", "watch"} {
			if !slices.Contains(missing, resource+"/"+v) {
				vs = append(vs, v)
			}
		}
		return vs
	}
	var rules []rbacv1.PolicyRule
	if vs := verbs("pods"); len(vs) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: vs})
	}
	if vs := verbs("inferencepools"); len(vs) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"inference.networking.k8s.io"}, Resources: []string{"inferencepools"}, Verbs: vs})
	}
	return rules
}

// A pickerScenario is a namespace with an InferencePool, the picker's
// ServiceAccount, Role and RoleBinding.
type pickerScenario struct {
	ns    string
	token string
}

var inferencePools = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

func newPickerScenario(ctx context.Context, t *testing.T, ns string, selector map[string]string, rules []rbacv1.PolicyRule) *pickerScenario {
	t.Helper()
	namespace(t, ns)
	d, _ := client(t, cp.Config())
	matchLabels := map[string]any{}
	for k, v := range selector {
		matchLabels[k] = v
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1",
		"kind":       "InferencePool",
		"metadata":   map[string]any{"name": "pool", "namespace": ns},
		"spec": map[string]any{
			"selector":    map[string]any{"matchLabels": matchLabels},
			"targetPorts": []any{map[string]any{"number": int64(engineTargetPort)}},
			"endpointPickerRef": map[string]any{
				"name": "epp", "port": map[string]any{"number": int64(9002)},
			},
		},
	}}
	if _, err := d.Resource(inferencePools).Namespace(ns).Create(ctx, pool, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("InferencePool: %v", err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "epp"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "epp"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "epp"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "epp"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "epp"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "epp", &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	return &pickerScenario{ns: ns, token: tr.Status.Token}
}

// pods creates a Running, Ready pod per engine (name → engine), labelled as
// the stack labels an engine's pods, with the engine's IP as its pod IP.
func (s *pickerScenario) pods(t *testing.T, engines map[string]*fakeEngine) {
	t.Helper()
	ctx := context.Background()
	for name, e := range engines {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"app.kubernetes.io/instance":  "s",
				"app.kubernetes.io/component": "serving-engine",
				"model":                       strings.TrimRight(name, "0123456789"),
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "vllm", Image: "vllm/vllm-openai:v0.10.0",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: engineTargetPort}},
			}}},
		}
		if strings.HasPrefix(name, "old") {
			pod.Labels["model"] = "a"
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
				Name: "vllm", Image: "vllm/vllm-openai:v0.10.0", Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		}
		if _, err := kube.CoreV1().Pods(s.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s/%s status: %v", s.ns, name, err)
		}
	}
}

// eppConfig is the GAIE v1.5.0 chart's default-plugins.yaml with the vLLM
// defaults (config/charts/epplib/templates/_config.yaml), the same as the
// picker's built-in default.
const eppConfig = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
- type: metrics-data-source
  parameters:
    scheme: "http"
    path: "/metrics"
    insecureSkipVerify: true
- type: core-metrics-extractor
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
dataLayer:
  sources:
  - pluginRef: metrics-data-source
    extractors:
    - pluginRef: core-metrics-extractor
`

// A picker is a running endpoint picker.
type picker struct {
	p                         *proc.Process
	grpcPort, health, metrics int
}

// start runs the picker for the scenario's pool as its ServiceAccount, its
// listeners on free ports of this namespace's loopback.
func (s *pickerScenario) start(t *testing.T) *picker {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cp.Kubeconfig(s.token), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(config, []byte(eppConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 3)
	pk := &picker{grpcPort: ports[0], health: ports[1], metrics: ports[2]}
	args := []string{
		"--pool-name=pool", "--pool-namespace=" + s.ns,
		"--grpc-port=" + strconv.Itoa(pk.grpcPort),
		"--grpc-health-port=" + strconv.Itoa(pk.health),
		"--metrics-port=" + strconv.Itoa(pk.metrics),
		"--secure-serving=false", "--metrics-endpoint-auth=false",
		"--enable-pprof=false", "--tracing=false",
		"--config-file=" + config, "-v=3",
	}
	p, err := proc.Start("epp-"+s.ns, eppBinary(), filepath.Join(dir, "epp.log"), dir, args,
		[]string{"KUBECONFIG=" + kubeconfig, "HOME=" + dir, "PATH=/usr/bin:/bin"})
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

// waitServing waits until the picker's gRPC health service says SERVING (it
// does once it has the pool).
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
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING, nil
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

// routeBody plays the gateway (GAIE.md §f): request headers, then the body
// with end_of_stream; the picker answers with the request headers' mutation
// naming the endpoint, or with an immediate response.
func (pk *picker) routeBody(t *testing.T, body string) routed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(pk.grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
	if err != nil {
		return routed{err: err}
	}
	hdr := func(k, v string) *corev3.HeaderValue { return &corev3.HeaderValue{Key: k, RawValue: []byte(v)} }
	err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			hdr(":method", "POST"), hdr(":path", "/v1/completions"), hdr(":authority", "gateway"),
			hdr("content-type", "application/json"), hdr("content-length", strconv.Itoa(len(body))),
		}}},
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
