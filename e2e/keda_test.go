package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vllm-project/function-vllm-stack/e2e/kubelet"
	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// kedaInnerEnv is set, to the outer network namespace, in the test binary
// that runs TestScaleFromZeroKEDA under unshare; TestMain then starts the
// scheduler too, so that the engine pods KEDA asks for get a node.
const kedaInnerEnv = "E2E_KEDA_OUTER_NETNS"

// podRange is the kubelet stand-in's pod IP range (e2e/kubelet). Inside the
// test's private network namespace it is routed to the loopback, so the
// engine stand-in can listen on the IP its pod is given; outside it nothing
// listens there and nothing connects.
const podRange = "198.51.100.0/24"

var scaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// TestScaleFromZeroKEDA is the scale-from-zero chain with the real programs
// (issue 40 item 2; make e2e-keda): model a of a stack behind the endpoint
// picker scales to zero. The function's ScaledObject and engine Deployment
// (at 0 replicas) are applied; the real endpoint picker (GAIE v1.5.0, its
// flow control on) holds a request while the pool has no endpoint; a real
// Prometheus scrapes the picker's queue gauge; the real KEDA operator
// (v2.20.2) reads the ScaledObject, asks Prometheus, and scales the
// Deployment to 1; the controller manager and the scheduler make and place
// the pod, the kubelet stand-in makes it Ready with an IP; an engine
// stand-in listens there; the picker sends the held request to it, and the
// engine answers it. With no more requests KEDA scales the Deployment back
// to 0 after the ScaledObject's cooldown (scaleToZero.idleSeconds).
//
// It needs $KEDA_OPERATOR and $PROMETHEUS (hack/e2e-keda.sh provides both)
// and the picker (make epp), and root for the private network namespace.
func TestScaleFromZeroKEDA(t *testing.T) {
	if os.Getenv(kedaInnerEnv) == "" {
		for _, v := range []string{"KEDA_OPERATOR", "PROMETHEUS"} {
			if os.Getenv(v) == "" {
				t.Skipf("$%s is not set (make e2e-keda)", v)
			}
		}
		runIsolatedTest(t, "TestScaleFromZeroKEDA", kedaInnerEnv,
			"ip link set lo up && ip route add local "+podRange+" dev lo")
		return
	}
	if err := checkIsolated(os.Getenv(kedaInnerEnv)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	installInferencePoolCRD(ctx, t)
	installKEDACRDs(ctx, t)
	node, err := kubelet.Start(ctx, cp.Config(), kubelet.Options{
		TempDir: t.TempDir(), Logf: t.Logf,
		Capacity: corev1.ResourceList{kubelet.GPU: *resource.NewQuantity(1, resource.DecimalSI)},
	})
	if err != nil {
		t.Fatalf("the kubelet stand-in: %v", err)
	}
	t.Cleanup(node.Stop)

	// The stack: model a scales to zero behind the picker. KEDA checks
	// every 2 s and scales to zero after 15 idle seconds; the picker holds
	// a request up to 30 s (coldStartSeconds, at least the engine's
	// start-up budget of 10 s); a new model's first replica is left up for
	// the cold start and the idle time (initialCooldownPeriod); no model
	// cache claim (nothing provisions volumes here).
	const (
		ns       = "keda-chain"
		polling  = 2
		idle     = 15
		coldSecs = 30
		initial  = coldSecs + idle
	)
	promPort := freePorts(t, 1)[0]
	promURL := "http://127.0.0.1:" + strconv.Itoa(promPort)
	s := newPickerScenario(ctx, t, ns, "", nil, func(spec map[string]any) {
		spec["models"].([]any)[0].(map[string]any)["scaleToZero"] = map[string]any{
			"maxReplicas": 1, "idleSeconds": idle, "pollingInterval": polling,
			"coldStartSeconds": coldSecs, "prometheusAddress": promURL,
		}
		spec["probes"] = map[string]any{"startup": map[string]any{"periodSeconds": 1, "failureThreshold": 10}}
		spec["storage"] = map[string]any{"enabled": false}
	})
	so, ok := s.r.objs["engine-a-scaledobject"].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("the stack composes no ScaledObject for model a: %T", s.r.objs["engine-a-scaledobject"])
	}
	// The engine Deployment as the function composes it: its replicas are
	// KEDA's, so the function leaves them out (stack/transition/
	// handover.go) and a new Deployment starts at the API server's default,
	// 1, until KEDA's first check scales it to 0.
	dep, ok := s.r.objs["engine-a"].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("engine-a is %T, want a Deployment", s.r.objs["engine-a"])
	}
	if dep.Spec.Replicas != nil {
		t.Fatalf("the composed engine Deployment's replicas: %d, want none (KEDA owns them)", *dep.Spec.Replicas)
	}
	for path, want := range map[string]int64{"pollingInterval": polling, "cooldownPeriod": idle, "initialCooldownPeriod": initial, "minReplicaCount": 0, "maxReplicaCount": 1} {
		if got, _, _ := unstructured.NestedInt64(so.Object, "spec", path); got != want {
			t.Fatalf("the rendered ScaledObject's spec.%s is %d, want %d", path, got, want)
		}
	}
	t.Logf("wake trigger: %v", nested(so.Object, "spec", "triggers"))

	// The engine Deployment and the ScaledObject, as the function composes
	// them.
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("engine Deployment: %v", err)
	}
	d, _ := client(t, cp.Config())
	created, err := d.Resource(scaledObjects).Namespace(ns).Create(ctx, so, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("ScaledObject: %v", err)
	}

	p := s.start(t)
	p.waitServing(t)
	engineTargets := startPrometheus(t, promPort, p.metrics, ns)
	startKEDA(t, ns)
	kedaReady := time.Now()

	// KEDA has read the ScaledObject and asked Prometheus: Ready, not
	// Active, and the Deployment left at 0.
	soName := so.GetName()
	waitFor(t, "the ScaledObject Ready and not Active", 2*time.Minute, func() (bool, string) {
		u, err := d.Resource(scaledObjects).Namespace(ns).Get(ctx, soName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := soConditions(u)
		return c["Ready"] == "True" && c["Active"] == "False", fmt.Sprint(c)
	})
	// KEDA made the HorizontalPodAutoscaler that takes over above one
	// replica (it would read KEDA's metrics adapter, not run here).
	hpa, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "keda-hpa-"+soName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("KEDA's HorizontalPodAutoscaler for %s: %v", soName, err)
	}
	if hpa.Spec.ScaleTargetRef.Name != dep.Name || hpa.Spec.MaxReplicas != 1 {
		t.Errorf("KEDA's HorizontalPodAutoscaler scales %s up to %d, want %s up to 1", hpa.Spec.ScaleTargetRef.Name, hpa.Spec.MaxReplicas, dep.Name)
	}
	// No request yet: KEDA leaves the new Deployment's first replica up
	// for initialCooldownPeriod after the ScaledObject was made (no last
	// active time: pkg/scaling/executor/scale_scaledobjects.go:210-213),
	// then scales it to 0, and its pod goes. (Without it KEDA scaled the
	// first engine in at its first check, 1.4 s after it was ready.)
	idled := waitFor(t, "the new engine Deployment scaled to 0 and its pod gone", 2*time.Minute, func() (bool, string) {
		n := replicas(t, ns, dep.Name)
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(dep.Spec.Selector.MatchLabels).String()})
		if err != nil {
			return false, err.Error()
		}
		return n == 0 && len(pods.Items) == 0, fmt.Sprintf("%d replicas, %d pods", n, len(pods.Items))
	})
	t.Logf("the new Deployment (1 replica, the API server's default) at 0 and its pod gone %s after KEDA's operator was ready",
		idled.Sub(kedaReady).Round(time.Millisecond))
	// The creation time has whole seconds: allow one.
	if up := idled.Sub(created.GetCreationTimestamp().Time); up < (initial-1)*time.Second {
		t.Errorf("KEDA scaled the new model's first replica in %s after the ScaledObject was made, before its initialCooldownPeriod of %ds", up.Round(time.Millisecond), initial)
	}

	// The engine stand-in starts listening on the pod's IP once the pod is
	// Ready, as a container would.
	// It runs a request longer than the cooldown plus a few checks: once
	// the picker has released the request, only the wake query's
	// vllm:num_requests_running term keeps the model awake.
	busy := (idle + 3*polling + 4) * time.Second
	eng := &chainEngine{model: servedModel(t, dep.Spec.Template.Spec.Containers[0]), busy: busy}
	podReady := make(chan string, 1)
	go eng.watch(ctx, t, ns, dep.Spec.Selector.MatchLabels, podReady)

	// A request with no engine: held by the picker.
	body := `{"model":"a","prompt":"Say hi","max_tokens":1}`
	sent := time.Now()
	done := p.routeAsync(t, body, (coldSecs+10)*time.Second)

	// KEDA scales the Deployment from 0 to 1.
	scaled := waitFor(t, "the engine Deployment scaled to 1", (polling+60)*time.Second, func() (bool, string) {
		n := replicas(t, ns, dep.Name)
		return n == 1, fmt.Sprintf("%d replicas", n)
	})
	// The picker may release the request before this test's poll sees the
	// pod Ready (its scrape of the new engine is what releases it): the
	// answer naming the new pod, which did not exist when the request was
	// sent, is what shows the request was held.
	var ip string
	select {
	case ip = <-podReady:
	case <-time.After(2 * time.Minute):
		t.Fatal("no engine pod became Ready")
	}
	readyAt := time.Now()
	addEngineTarget(t, engineTargets, net.JoinHostPort(ip, strconv.Itoa(engineTargetPort)), ns)
	var a answer
	select {
	case a = <-done:
	case <-time.After((coldSecs + 20) * time.Second):
		t.Fatal("the held request was not answered")
	}
	want := net.JoinHostPort(ip, strconv.Itoa(engineTargetPort))
	if a.r.endpoint != want {
		t.Fatalf("the held request: got %s, want the new pod's endpoint %s", a.r, want)
	}
	completion := eng.complete(t, a.r.endpoint, body)
	answered := time.Now()
	// The engine ran the request for busy, past the cooldown since the
	// picker's queue emptied: still at 1.
	if n := replicas(t, ns, dep.Name); n != 1 {
		t.Fatalf("the engine Deployment has %d replicas right after its engine ran a request for %s (cooldownPeriod %ds), want 1: the wake query's running-requests term did not keep it awake", n, busy, idle)
	}
	ms := func(at time.Time) time.Duration { return at.Sub(sent).Round(time.Millisecond) }
	t.Logf("request sent at 0; scaled to 1 at %s; pod Ready at %s; the picker released the request at %s; the engine, running it for %s, answered at %s: %q",
		ms(scaled), ms(readyAt), ms(a.at), busy, ms(answered), completion)
	// 0 to 1 within KEDA's polling, Prometheus' scrape (1 s) and the
	// operator's reconcile, with room for a busy 2-core machine.
	if bound := (polling + 20) * time.Second; scaled.Sub(sent) > bound {
		t.Errorf("0 to 1 took %s after the request, want within %s (pollingInterval %ds)", scaled.Sub(sent), bound, polling)
	}

	// Idle: back to 0 after the cooldown, counted from KEDA's last active
	// check (l.212-213), which came at most a polling interval (and a
	// scrape) before the engine answered.
	zero := waitFor(t, "the engine Deployment back to 0", (idle+polling+90)*time.Second, func() (bool, string) {
		n := replicas(t, ns, dep.Name)
		return n == 0, fmt.Sprintf("%d replicas", n)
	})
	t.Logf("back to 0 %s after the request, %s after the answer (cooldownPeriod %ds)",
		ms(zero), zero.Sub(answered).Round(time.Millisecond), idle)
	if zero.Sub(sent) < idle*time.Second || zero.Sub(answered) < (idle-polling)*time.Second {
		t.Errorf("scaled to 0 %s after the request, %s after the answer: before the cooldown of %ds", zero.Sub(sent), zero.Sub(answered), idle)
	}
}

// installKEDACRDs installs every CRD of the KEDA release tools/keda pins,
// from its module: the operator watches ScaledJobs, TriggerAuthentications
// and CloudEventSources too, and does not start without them.
func installKEDACRDs(ctx context.Context, t *testing.T) {
	t.Helper()
	dir := moduleDir(ctx, t, "../tools/keda", "github.com/kedacore/keda/v2")
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("KEDA's CRDs in %s: %v (%d files)", dir, err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := yamlDocs(b)
		if err != nil || len(docs) != 1 {
			t.Fatalf("%s: %v (%d documents)", f, err, len(docs))
		}
		if err := createCRD(ctx, docs[0], "e2e-admin"); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("the API server rejects KEDA's CRD %s: %v", filepath.Base(f), err)
		}
	}
	mapper.Reset()
	t.Logf("installed KEDA's %d CRDs from %s", len(files), dir)
}

// moduleDir is the directory of module mod as required by the tool module
// in dir, from the module cache.
func moduleDir(ctx context.Context, t *testing.T, dir, mod string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s in %s: %v", mod, dir, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Error != "" || m.Dir == "" {
		t.Fatalf("go mod download %s in %s: %v %s", mod, dir, err, m.Error)
	}
	return m.Dir
}

// startPrometheus runs Prometheus on 127.0.0.1:port, scraping every second
// the picker's metrics port and the engines listed in the file it returns
// (file service discovery: the test writes the pod's address there once
// KEDA has made it), with the label the Prometheus Operator gives a
// ServiceMonitor's targets that the rendered queries select (namespace; the
// picker's series carry inference_pool, vLLM's model_name), and waits until
// it has scraped the picker.
func startPrometheus(t *testing.T, port, pickerMetrics int, ns string) (engineTargets string) {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: picker
  static_configs:
  - targets: ["127.0.0.1:%d"]
    labels:
      namespace: %s
- job_name: engines
  file_sd_configs:
  - files: [%s]
    refresh_interval: 1s
`, pickerMetrics, ns, filepath.Join(dir, "engines.json"))
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--config.file=" + cfg,
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
	}
	startProcess(t, "prometheus", os.Getenv("PROMETHEUS"), dir, args, []string{"HOME=" + dir})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, "Prometheus scraping the picker", time.Minute, func() (bool, string) {
		v, err := promQuery(base, `up{job="picker"}`)
		return err == nil && v == "1", fmt.Sprintf("%q %v", v, err)
	})
	return filepath.Join(dir, "engines.json")
}

// addEngineTarget lists the engine at endpoint in Prometheus' file of
// engine targets (written whole, then renamed, as file discovery wants).
func addEngineTarget(t *testing.T, file, endpoint, ns string) {
	t.Helper()
	b, err := json.Marshal([]map[string]any{{"targets": []string{endpoint}, "labels": map[string]string{"namespace": ns}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
}

// promQuery is the value of an instant query's only sample ("" if none).
func promQuery(base, q string) (string, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct{ Value [2]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	if len(r.Data.Result) == 0 {
		return "", nil
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return s, nil
}

// startKEDA runs KEDA's operator watching ns, with the admin's credentials
// (the operator's own ClusterRole is KEDA's chart's, not the stack's), its
// listeners on 127.0.0.1, and a self-signed certificate for its metrics
// gRPC service (which only KEDA's metrics adapter would call).
func startKEDA(t *testing.T, ns string) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, cp.Kubeconfig(cp.Config().BearerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "certs")
	writeSelfSigned(t, certs)
	ports := freePorts(t, 3)
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	args := []string{
		"--leader-elect=false",
		"--metrics-bind-address=" + addr(0),
		"--health-probe-bind-address=" + addr(1),
		"--metrics-service-bind-address=" + addr(2),
		"--cert-dir=" + certs,
		"--ca-dir=" + certs,
		"--enable-webhook-patching=false",
		"--enable-apiservice-patching=false",
	}
	env := []string{
		"KUBECONFIG=" + kubeconfig, "HOME=" + dir,
		"WATCH_NAMESPACE=" + ns, "POD_NAMESPACE=" + ns, "POD_NAME=keda-operator-0",
		"KEDA_CLUSTER_OBJECT_NAMESPACE=" + ns,
	}
	op := startProcess(t, "keda-operator", os.Getenv("KEDA_OPERATOR"), dir, args, env)
	waitFor(t, "KEDA's operator ready", 2*time.Minute, func() (bool, string) {
		if exited, why := op.Exited(); exited {
			t.Fatalf("KEDA's operator exited: %s\n%s", why, op.Tail(40))
		}
		resp, err := http.Get("http://" + addr(1) + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// startProcess runs bin in dir, its log in dir/<name>.log, until the test
// ends; the log's end is reported if the test failed.
func startProcess(t *testing.T, name, bin, dir string, args, env []string) *proc.Process {
	t.Helper()
	p, err := proc.Start(name, bin, filepath.Join(dir, name+".log"), dir, args, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("----- last 60 lines of %s's log -----\n%s", name, p.Tail(60))
		}
		if err := p.Stop(5 * time.Second); err != nil {
			t.Errorf("stopping %s: %v", name, err)
		}
	})
	return p
}

// writeSelfSigned writes ca.crt, tls.crt and tls.key (one self-signed
// certificate for 127.0.0.1) into dir.
func writeSelfSigned(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "keda-operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.crt": crt, "tls.crt": crt, "tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// soConditions are a ScaledObject's status conditions, type → status.
func soConditions(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		ty, _ := m["type"].(string)
		st, _ := m["status"].(string)
		out[ty] = st
	}
	return out
}

// replicas is the Deployment's spec.replicas (what KEDA sets).
func replicas(t *testing.T, ns, name string) int32 {
	t.Helper()
	dep, err := kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	if dep.Spec.Replicas == nil {
		return -1
	}
	return *dep.Spec.Replicas
}

// waitFor polls cond every 200 ms until it holds, and returns when it did;
// after timeout it fails with what cond said last.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) time.Time {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
	}
	return time.Now()
}

// A chainEngine stands in for the engine container of the pod KEDA's
// scale-up makes: vLLM's /metrics page, with vllm:num_requests_running the
// requests it is running, labelled model_name with the model it serves,
// and /v1/completions, which runs each request for busy; on the pod's IP
// and the pool's target port.
type chainEngine struct {
	model   string
	busy    time.Duration
	running atomic.Int64
}

// servedModel is the model name vLLM labels its series with: `vllm serve
// <model>`'s model, unless --served-model-name names another.
func servedModel(t *testing.T, c corev1.Container) string {
	t.Helper()
	args := append(append([]string{}, c.Command...), c.Args...)
	model := ""
	for i, a := range args {
		if a == "serve" && i+1 < len(args) {
			model = args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--served-model-name="); ok {
			return v
		}
	}
	if model == "" {
		t.Fatalf("the engine container runs no `vllm serve <model>`: %v", args)
	}
	return model
}

// watch waits for a Ready pod of the selector in ns, listens on its IP and
// reports the IP on ready.
func (e *chainEngine) watch(ctx context.Context, t *testing.T, ns string, selector map[string]string, ready chan<- string) {
	sel := labels.SelectorFromSet(selector).String()
	for {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			for _, p := range pods.Items {
				if p.Status.PodIP != "" && podIsReady(&p) && p.DeletionTimestamp == nil {
					e.serve(t, p.Status.PodIP)
					ready <- p.Status.PodIP
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *chainEngine) serve(t *testing.T, ip string) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(engineTargetPort)))
	if err != nil {
		t.Errorf("the engine stand-in cannot listen on its pod's IP %s: %v", ip, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, e.metrics(t))
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		e.running.Add(1)
		time.Sleep(e.busy)
		e.running.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"text_completion","model":%q,"choices":[{"index":0,"text":"Hi","finish_reason":"length"}]}`, req.Model)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// metrics is vLLM's page for the model, with the requests running now.
func (e *chainEngine) metrics(t *testing.T) string {
	page := strings.ReplaceAll(vllmMetrics("vllm:kv_cache_usage_perc", 0, 0), `model_name="m"`, fmt.Sprintf("model_name=%q", e.model))
	line := fmt.Sprintf(`vllm:num_requests_running{engine="0",model_name=%q} `, e.model)
	if !strings.Contains(page, line+"1.0\n") {
		t.Errorf("the engine's metrics page has no line %q1.0:\n%s", line, page)
	}
	return strings.Replace(page, line+"1.0\n", line+strconv.FormatInt(e.running.Load(), 10)+"\n", 1)
}

// complete sends the request body to the engine at endpoint, as the
// gateway does with the picker's answer, and returns the completion's text.
func (e *chainEngine) complete(t *testing.T, endpoint, body string) string {
	t.Helper()
	hc := &http.Client{Timeout: e.busy + 30*time.Second}
	resp, err := hc.Post("http://"+endpoint+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("the request to the engine %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c struct {
		Model   string
		Choices []struct{ Text string }
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil || len(c.Choices) != 1 || c.Model != "a" {
		t.Fatalf("the engine %s answered %s: %s", endpoint, resp.Status, b)
	}
	return c.Choices[0].Text
}
