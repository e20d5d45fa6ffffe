//go:build e2e_crossplane

package crossplane

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/internal/adaptersync"
)

// The runtime adapters example (example/stacks/runtime-adapters.yaml): its
// model, base model and the objects the function names after them.
const (
	adaptersExample = "runtime-adapters"
	adaptersModel   = "llama"
	adaptersBase    = "meta-llama/Llama-2-7b-hf"
)

// checkRuntimeAdapters: the adapters of a Ready stack change without a new
// engine pod. No vLLM runs here, so the test runs the sync container's own
// code (internal/adaptersync's Syncer, as `function adapter-sync` runs it)
// for each engine pod, against a fake engine that keeps what is loaded
// (vLLM's runtime LoRA endpoints and /v1/models) and a fake Hugging Face
// hub, with the pod's patcher authenticated by a token of the stack's
// adapter sync ServiceAccount bound to that pod (the RBAC the function
// composed, through Crossplane). The test plays the kubelet by copying the
// composed ConfigMap into the program's --config file as it changes.
//
// The example lists a Hugging Face adapter (sql) and a path on the model
// cache where nothing is (support): status.models[].adapters says sql is
// loaded on the pod and support is not, with the program's reason, for two
// TTLs. Then the stack's adapters change (support removed, chat added):
// the ConfigMap changes, the program loads chat (support, never loaded,
// has nothing to unload), and the stack holds Ready with status.models[].adapters
// saying both are loaded, the pod's vllm.ai/lora-adapters saying the same,
// the same engine pods (UIDs) and the engine Deployment's generation and
// pod template unchanged, for two TTLs.
//
// The router's side: the production-stack router re-reads an engine's
// /v1/models only on a pod watch event (service_discovery.py at
// vllm-stack-0.1.12, stack/testdata/upstream/lora-runtime.md), which the
// program's lora-modified patch causes. Each fake engine serves at its
// pod's IP, port 8000 (the address added to lo), and the router's own
// discovery code (K8sPodIPServiceDiscovery of 0.1.12, read from a git
// repository of production-stack, run by testdata/router/discover.py on
// Debian's python3 with its kubernetes, aiohttp and requests packages; the
// test says so and goes on without it when either is missing) runs as the
// router's ServiceAccount with the router Deployment's
// --k8s-label-selector. routerView plays the same loop in Go, always. The
// test requires each to list chat after its load, and logs the delay; then
// an adapter loaded into an engine with no change of its pod is not listed
// for 3 s, and a lora-modified patch of the pod lists it.
func checkRuntimeAdapters(t *testing.T, s *testStack) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	engines := s.podsOf(t, "serving-engine", adaptersModel)
	if len(engines) == 0 {
		t.Fatalf("%s has no engine pods of model %s", s, adaptersModel)
	}
	deployment := s.name() + "-" + adaptersModel + "-deployment-vllm"
	configMap := s.name() + "-" + adaptersModel + "-lora-adapters"
	before := get(t, deploymentGVR, s.ns(), deployment)
	if before == nil {
		t.Fatalf("no Deployment %s", deployment)
	}
	uids := map[string]string{}
	for _, p := range engines {
		uids[p.GetName()] = string(p.GetUID())
	}

	hub := httptest.NewServer(fakeHub{
		"yard1/llama-2-7b-sql-lora-test": adaptersBase,
		"org/chat-lora":                  adaptersBase,
	})
	t.Cleanup(hub.Close)
	fakes := map[string]*fakeEngine{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // then wait for the sync loops and the router's discovery
	podIPs := true // every fake engine serves at its pod's IP
	for _, p := range engines {
		e := newFakeEngine(adaptersBase)
		srv, atPodIP := serveAtPodIP(t, p, e)
		t.Cleanup(srv.Close) // after the goroutines below end
		podIPs = podIPs && atPodIP
		e.url = srv.URL
		fakes[p.GetName()] = e
		sy := newSyncer(t, s, p, configMap, e.url, hub.URL)
		wg.Add(1)
		go func() { defer wg.Done(); sy.run(ctx, t) }()
	}
	rv := startRouterView(ctx, t, s, fakes)
	var real *realRouter
	routerDir := t.TempDir()
	if why := realRouterMissing(podIPs, routerDir); why != "" {
		t.Logf("the production-stack router's own discovery is not run: %s; only the played one is", why)
	} else {
		real = startRealRouter(ctx, t, s, &wg, routerDir)
	}

	// What the status says of each adapter, and what each pod's annotation
	// says (internal/adaptersync writes it).
	adaptersState := func(want []map[string]any, loaded []string) func() (bool, string) {
		return func() (bool, string) {
			var bad []string
			if ok, seen := s.readyState(t, s.expect()); !ok {
				bad = append(bad, seen)
			}
			xr := s.xr(t)
			models, _, _ := unstructured.NestedSlice(xr.Object, "status", "models")
			var got any
			if len(models) == 1 {
				got = models[0].(map[string]any)["adapters"]
			}
			if g, w := jsonOf(got), jsonOf(want); g != w {
				bad = append(bad, fmt.Sprintf("status.models[0].adapters %s, want %s", g, w))
			}
			pods := s.podsOf(t, "serving-engine", adaptersModel)
			if len(pods) != len(uids) {
				bad = append(bad, fmt.Sprintf("%d engine pods, want the %d of before", len(pods), len(uids)))
			}
			status := map[string]string{}
			for _, n := range loaded {
				status[n] = adaptersync.Loaded
			}
			for _, p := range pods {
				if uids[p.GetName()] != string(p.GetUID()) {
					bad = append(bad, fmt.Sprintf("engine pod %s (uid %s) is new: the engines were %v", p.GetName(), p.GetUID(), uids))
					continue
				}
				if got := fakes[p.GetName()].adapters(); !slices.Equal(got, loaded) {
					bad = append(bad, fmt.Sprintf("pod %s's engine has %v loaded, want %v", p.GetName(), got, loaded))
				}
				ann := p.GetAnnotations()[adaptersync.AnnotationStatus]
				var st map[string]string
				_ = json.Unmarshal([]byte(ann), &st)
				for n, v := range st {
					if v != adaptersync.Loaded {
						delete(st, n) // a reason, checked in the status
					}
				}
				if !maps.Equal(st, status) {
					bad = append(bad, fmt.Sprintf("pod %s %s %s, want %v loaded", p.GetName(), adaptersync.AnnotationStatus, ann, loaded))
				}
			}
			d := get(t, deploymentGVR, s.ns(), deployment)
			if d == nil {
				bad = append(bad, "no Deployment "+deployment)
			} else {
				if d.GetGeneration() != before.GetGeneration() {
					bad = append(bad, fmt.Sprintf("Deployment %s generation %d, was %d", deployment, d.GetGeneration(), before.GetGeneration()))
				}
				if g, w := jsonOf(d.Object["spec"].(map[string]any)["template"]), jsonOf(before.Object["spec"].(map[string]any)["template"]); g != w {
					bad = append(bad, fmt.Sprintf("Deployment %s's pod template changed: %s, was %s", deployment, g, w))
				}
			}
			return len(bad) == 0, strings.Join(bad, "; ")
		}
	}

	n := int64(len(engines))
	first := engines[0].GetName()
	for _, p := range engines[1:] {
		first = min(first, p.GetName())
	}
	stable(t, 2*e2eTTL, 3*time.Minute, s.String()+": sql loaded, support not", adaptersState([]map[string]any{
		{"name": "sql", "loaded": n, "pods": n},
		{"name": "support", "loaded": int64(0), "pods": n, "reason": "pod " + first + ": no adapter_config.json in /data/adapters/support"},
	}, []string{"sql"}))

	// Add one, remove one.
	edited := time.Now()
	s.edit(t, func(spec map[string]any) {
		m := spec["model"].(map[string]any)
		m["adapters"] = []any{
			map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "yard1/llama-2-7b-sql-lora-test", "revision": "main"}},
			map[string]any{"name": "chat", "huggingFace": map[string]any{"repo": "org/chat-lora"}},
		}
	})
	wantConfig := `[{"name":"sql","source":{"huggingFace":{"repo":"yard1/llama-2-7b-sql-lora-test","revision":"main"}}},{"name":"chat","source":{"huggingFace":{"repo":"org/chat-lora"}}}]`
	eventually(t, time.Minute, "ConfigMap "+configMap+" with the new adapters", func() (bool, string) {
		cm, err := admin.Core.ConfigMaps(s.ns()).Get(ctx, configMap, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["adapters.json"] == wantConfig, cm.Data["adapters.json"]
	})
	updated := time.Since(edited)
	stable(t, 2*e2eTTL, 3*time.Minute, s.String()+": sql and chat loaded, same engine pods and pod template", adaptersState([]map[string]any{
		{"name": "sql", "loaded": n, "pods": n},
		{"name": "chat", "loaded": n, "pods": n},
	}, []string{"chat", "sql"}))
	t.Logf("%s: adapters changed in place: ConfigMap updated %s after the edit; engine pods %v and Deployment %s (generation %d) unchanged",
		s, updated.Round(time.Millisecond), slices.Sorted(maps.Keys(uids)), deployment, before.GetGeneration())

	// The router's view: every engine's chat, once loaded, listed after the
	// pod event its lora-modified patch caused.
	for name, e := range fakes {
		loadedAt := e.loadedAt("chat")
		seen, ok := rv.firstListed(name, "chat", loadedAt)
		if !ok {
			t.Errorf("pod %s: the router's pod-ip discovery (played) never listed chat after it was loaded at %s", name, loadedAt.Format(time.RFC3339Nano))
			continue
		}
		t.Logf("pod %s: chat loaded %s after the edit; listed by the router's discovery (played: pod watch event, then /v1/models) %s after the load",
			name, loadedAt.Sub(edited).Round(time.Millisecond), seen.Sub(loadedAt).Round(time.Millisecond))
		if real == nil {
			continue
		}
		// The router's own code: K8sPodIPServiceDiscovery of
		// vllm-stack-0.1.12, watching as the router's ServiceAccount.
		var at time.Time
		eventually(t, 30*time.Second, "the router's discovery listing chat on "+name, func() (bool, string) {
			at, ok = real.firstListed(name, "chat", loadedAt)
			return ok, real.last()
		})
		t.Logf("pod %s: listed by the production-stack router's own discovery (vllm-stack-0.1.12 service_discovery.py) %s after chat was loaded",
			name, at.Sub(loadedAt).Round(time.Millisecond))
	}

	// The pod's change is what makes the router look: an adapter loaded
	// into the engine with no change of the pod (here, by hand, from
	// outside the program's directory, which it leaves alone) is not
	// listed for 3 s; the lora-modified patch the program writes after a
	// load lists it.
	views := map[string]listedBy{"played": rv}
	if real != nil {
		views["router's own"] = real
	}
	probeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(probeDir, "adapter_config.json"), []byte(`{"peft_type": "LORA", "base_model_name_or_path": "`+adaptersBase+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&adaptersync.Engine{URL: fakes[first].url, Client: http.DefaultClient}).Load(ctx, "probe", probeDir); err != nil {
		t.Fatal(err)
	}
	probed := time.Now()
	time.Sleep(3 * time.Second)
	for what, v := range views {
		if at, ok := v.firstListed(first, "probe", probed); ok {
			t.Errorf("the %s discovery listed probe %s after it was loaded with no change of pod %s: something else made it look", what, at.Sub(probed).Round(time.Millisecond), first)
		}
	}
	ann, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{adaptersync.AnnotationModified: time.Now().UTC().Format(time.RFC3339Nano)}}})
	bumped := time.Now()
	if _, err := admin.Core.Pods(s.ns()).Patch(ctx, first, types.MergePatchType, ann, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for what, v := range views {
		var at time.Time
		eventually(t, 30*time.Second, "the "+what+" discovery listing probe after the bump", func() (bool, string) {
			var ok bool
			at, ok = v.firstListed(first, "probe", bumped)
			return ok, "not yet"
		})
		t.Logf("pod %s: probe, loaded with no change of the pod, not listed by the %s discovery for 3s; listed %s after the %s patch",
			first, what, at.Sub(bumped).Round(time.Millisecond), adaptersync.AnnotationModified)
	}
}

// listedBy is a router discovery's record: when a pod's models were first
// read with name in them, at or after since.
type listedBy interface {
	firstListed(pod, name string, since time.Time) (time.Time, bool)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A syncer is the adapter sync container of one engine pod: the program's
// Syncer, its --config file fed from the ConfigMap.
type syncer struct {
	sy        *adaptersync.Syncer
	configMap string
	ns        string
}

func newSyncer(t *testing.T, s *testStack, pod unstructured.Unstructured, configMap, engineURL, hubURL string) *syncer {
	t.Helper()
	ctx := context.Background()
	sa := s.name() + "-adapter-sync"
	if got, _, _ := unstructured.NestedString(pod.Object, "spec", "serviceAccountName"); got != sa {
		t.Fatalf("engine pod %s runs as ServiceAccount %q, want %s", pod.GetName(), got, sa)
	}
	// The token the kubelet projects into the sync container.
	tr, err := admin.Core.ServiceAccounts(s.ns()).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences:         []string{cluster.ServiceAccountIssuer},
		ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.GetName(), UID: pod.GetUID()},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s: %v", sa, err)
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cp.Config().CAData) {
		t.Fatal("no CA certificate in the cluster's config")
	}
	return &syncer{
		configMap: configMap, ns: s.ns(),
		sy: &adaptersync.Syncer{
			ConfigFile: filepath.Join(dir, "adapters.json"),
			Dir:        filepath.Join(dir, "lora-adapters"),
			Engine:     &adaptersync.Engine{URL: engineURL, Client: &http.Client{Timeout: 10 * time.Second}},
			Hub:        &adaptersync.Hub{URL: hubURL, Client: &http.Client{Timeout: 10 * time.Second}},
			Pod: &adaptersync.InClusterPatcher{
				Server: cp.Config().Host, Namespace: s.ns(), Name: pod.GetName(), TokenFile: token,
				Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
			},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			// A failure's reason stays as it is for the test's windows.
			RetryBase: time.Hour,
		},
	}
}

// run copies the ConfigMap into the --config file (the kubelet's part,
// here at once) and reconciles, every half second, until ctx ends.
func (y *syncer) run(ctx context.Context, t *testing.T) {
	var last string
	for ctx.Err() == nil {
		cm, err := admin.Core.ConfigMaps(y.ns).Get(ctx, y.configMap, metav1.GetOptions{})
		if err == nil {
			if err = os.WriteFile(y.sy.ConfigFile, []byte(cm.Data["adapters.json"]), 0o644); err == nil {
				err = y.sy.Reconcile(ctx)
			}
		}
		if err != nil && ctx.Err() == nil && err.Error() != last {
			t.Logf("adapter sync: %v", err)
		}
		if err != nil {
			last = err.Error()
		} else {
			last = ""
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// fakeEngine keeps what vLLM's runtime LoRA endpoints keep, and answers
// as vLLM v0.10.0 does (stack/testdata/upstream/lora-runtime.md).
type fakeEngine struct {
	base, url string
	mu        sync.Mutex
	loaded    map[string]string    // name → path
	at        map[string]time.Time // name → when last loaded
}

func newFakeEngine(base string) *fakeEngine {
	return &fakeEngine{base: base, loaded: map[string]string{}, at: map[string]time.Time{}}
}

func (e *fakeEngine) adapters() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.loaded))
}

func (e *fakeEngine) loadedAt(name string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.at[name]
}

func (e *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fail := func(code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
	}
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/models":
		data := []map[string]any{{"id": e.base, "object": "model", "root": e.base, "parent": nil}}
		for _, n := range slices.Sorted(maps.Keys(e.loaded)) {
			data = append(data, map[string]any{"id": n, "object": "model", "root": e.loaded[n], "parent": e.base})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	case "POST /v1/load_lora_adapter":
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.Path == "" {
			fail(400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
			return
		}
		if _, ok := e.loaded[req.Name]; ok {
			fail(400, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded.", req.Name))
			return
		}
		if _, err := os.Stat(filepath.Join(req.Path, "adapter_config.json")); err != nil {
			fail(404, "NotFoundError", fmt.Sprintf("Loading lora %s failed: No adapter found for %s", req.Name, req.Path))
			return
		}
		e.loaded[req.Name], e.at[req.Name] = req.Path, time.Now()
		fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
	case "POST /v1/unload_lora_adapter":
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(400, "InvalidUserInput", err.Error())
			return
		}
		if _, ok := e.loaded[req.Name]; !ok {
			fail(404, "NotFoundError", fmt.Sprintf("The lora adapter '%s' cannot be found.", req.Name))
			return
		}
		delete(e.loaded, req.Name)
		fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
	default:
		fail(404, "", "Not Found")
	}
}

// fakeHub serves Hugging Face's listing and file endpoints for adapter
// repositories (repo → base model): an adapter_config.json and weights.
type fakeHub map[string]string

func (h fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	for repo, base := range h {
		switch {
		case strings.HasPrefix(p, "/api/models/"+repo+"/revision/"):
			_ = json.NewEncoder(w).Encode(map[string]any{"siblings": []any{
				map[string]any{"rfilename": "README.md"},
				map[string]any{"rfilename": "adapter_config.json"},
				map[string]any{"rfilename": "adapter_model.safetensors"},
			}})
			return
		case strings.HasPrefix(p, "/"+repo+"/resolve/") && strings.HasSuffix(p, "/adapter_config.json"):
			_ = json.NewEncoder(w).Encode(map[string]any{"peft_type": "LORA", "base_model_name_or_path": base, "r": 8, "lora_alpha": 16})
			return
		case strings.HasPrefix(p, "/"+repo+"/resolve/") && strings.HasSuffix(p, "/adapter_model.safetensors"):
			_, _ = w.Write([]byte("weights of " + repo))
			return
		}
	}
	http.NotFound(w, r)
}

// routerView plays the production-stack router's pod-ip discovery
// (K8sPodIPServiceDiscovery._watch_engines, service_discovery.py:671-722 at
// vllm-stack-0.1.12): a watch of the pods its --k8s-label-selector selects;
// on ADDED or MODIFIED of a pod whose containers are all ready and that is
// not terminating, GET /v1/models and keep the ids (:590-623). Engines are
// the fake ones, by pod name, in place of http://<pod IP>:8000.
type routerView struct {
	mu sync.Mutex
	// lists are, per pod, the model lists read and when.
	lists map[string][]listed
}

type listed struct {
	at     time.Time
	models []string
}

func startRouterView(ctx context.Context, t *testing.T, s *testStack, engines map[string]*fakeEngine) *routerView {
	t.Helper()
	selector := routerLabelSelector(t, s)
	w, err := admin.Core.Pods(s.ns()).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("watching the pods of %s: %v", selector, err)
	}
	rv := &routerView{lists: map[string][]listed{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			e := engines[p.Name]
			if e == nil || p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 || slices.ContainsFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return !c.Ready }) {
				continue
			}
			models, err := listModels(ctx, e.url)
			if err != nil {
				continue
			}
			rv.mu.Lock()
			rv.lists[p.Name] = append(rv.lists[p.Name], listed{time.Now(), models})
			rv.mu.Unlock()
		}
	}()
	return rv
}

// firstListed is when the pod's models were first read with name in them
// at or after since.
func (rv *routerView) firstListed(pod, name string, since time.Time) (time.Time, bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for _, l := range rv.lists[pod] {
		if !l.at.Before(since) && slices.Contains(l.models, name) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

func listModels(ctx context.Context, url string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// routerLabelSelector is the --k8s-label-selector of the stack's router.
func routerLabelSelector(t *testing.T, s *testStack) string {
	t.Helper()
	name := s.name() + "-deployment-router"
	d := get(t, deploymentGVR, s.ns(), name)
	if d == nil {
		t.Fatalf("no Deployment %s", name)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		c, _ := c.(map[string]any)
		var argv []string
		for _, k := range []string{"command", "args"} {
			l, _ := c[k].([]any)
			for _, a := range l {
				s, _ := a.(string)
				argv = append(argv, s)
			}
		}
		for i, a := range argv {
			if v, ok := strings.CutPrefix(a, "--k8s-label-selector="); ok {
				return v
			}
			if a == "--k8s-label-selector" && i+1 < len(argv) {
				return argv[i+1]
			}
		}
	}
	t.Fatalf("the router Deployment %s has no --k8s-label-selector", name)
	return ""
}

// serveAtPodIP serves a fake engine where the router reaches the pod's
// engine, http://<pod IP>:8000: the kubelet stand-in's pod IPs are
// addresses of no interface, so the address is added to lo (the tests' own
// network namespace, as root) and removed at the end. Where that fails, on
// 127.0.0.1 (false).
func serveAtPodIP(t *testing.T, pod unstructured.Unstructured, h http.Handler) (*httptest.Server, bool) {
	t.Helper()
	ip, _, _ := unstructured.NestedString(pod.Object, "status", "podIP")
	if net.ParseIP(ip) == nil {
		t.Logf("pod %s has no IP: its fake engine serves on 127.0.0.1", pod.GetName())
		return httptest.NewServer(h), false
	}
	if out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Logf("cannot add %s to lo (%v: %s): the fake engine of pod %s serves on 127.0.0.1", ip, err, bytes.TrimSpace(out), pod.GetName())
		return httptest.NewServer(h), false
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run() })
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "8000"))
	if err != nil {
		t.Logf("cannot listen on %s:8000 (%v): the fake engine of pod %s serves on 127.0.0.1", ip, err, pod.GetName())
		return httptest.NewServer(h), false
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv, true
}

// routerPython is the Python with the router discovery's packages
// (Debian's python3-kubernetes, -aiohttp, -requests).
func routerPython() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import kubernetes, aiohttp, requests").Run() == nil {
			return py
		}
	}
	return ""
}

// routerRelease is the production-stack release whose discovery runs: the
// router release the stack renders for by default.
const routerRelease = "vllm-stack-0.1.12"

// routerSource writes the router's service_discovery.py of routerRelease,
// read from a git repository of vllm-project/production-stack (CHART_SRC,
// as for helm2stack's chart tests and hack/helm-compare.sh, or the
// development VM's mirror), into dir/vllm_router/. Upstream's code is read
// where it is, never copied into this repository, so the real router's
// discovery runs only where such a repository is.
func routerSource(dir string) error {
	src := cmp.Or(os.Getenv("CHART_SRC"), "/work/.mirror/vllm-project+production-stack/repo")
	out, err := exec.Command("git", "--git-dir="+src, "show", routerRelease+":src/vllm_router/service_discovery.py").Output()
	if err != nil {
		return fmt.Errorf("no %s:src/vllm_router/service_discovery.py in %s (set CHART_SRC to a git repository of vllm-project/production-stack): %v", routerRelease, src, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "vllm_router"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "vllm_router", "service_discovery.py"), out, 0o644)
}

// realRouterMissing is why the router's own discovery cannot run, or "";
// it writes the router's source into dir.
func realRouterMissing(podIPs bool, dir string) string {
	switch {
	case !podIPs:
		return "the fake engines are not at their pods' IPs"
	case routerPython() == "":
		return "no python3 with the kubernetes, aiohttp and requests packages (apt-get install python3-kubernetes python3-aiohttp python3-requests)"
	}
	if err := routerSource(dir); err != nil {
		return err.Error()
	}
	return ""
}

// realRouter is the production-stack router's pod-ip discovery, its own
// code (testdata/router), as the router's ServiceAccount, and what it
// listed over time.
type realRouter struct {
	mu     sync.Mutex
	lists  map[string][]listed
	stderr bytes.Buffer
}

func startRealRouter(ctx context.Context, t *testing.T, s *testStack, wg *sync.WaitGroup, routerDir string) *realRouter {
	t.Helper()
	name := s.name() + "-deployment-router"
	d := get(t, deploymentGVR, s.ns(), name)
	sa, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	tr, err := admin.Core.ServiceAccounts(s.ns()).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3607),
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for the router's ServiceAccount %q: %v", sa, err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, cp.Kubeconfig(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	rr := &realRouter{lists: map[string][]listed{}}
	cmd := exec.CommandContext(ctx, routerPython(), "testdata/router/discover.py", routerDir, s.ns(), routerLabelSelector(t, s), "8000")
	// No proxy: requests reads the proxy variables, and the engines are
	// reached directly.
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "PATH=" + os.Getenv("PATH"), "NO_PROXY=*", "no_proxy=*", "HOME=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1"}
	cmd.Stderr = &lockedWriter{mu: &rr.mu, w: &rr.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the router's discovery: %v", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l struct {
				T       float64             `json:"t"`
				Engines map[string][]string `json:"engines"`
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			at := time.Unix(0, int64(l.T*1e9))
			rr.mu.Lock()
			for pod, models := range l.Engines {
				rr.lists[pod] = append(rr.lists[pod], listed{at, models})
			}
			rr.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	return rr
}

func (rr *realRouter) firstListed(pod, name string, since time.Time) (time.Time, bool) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for _, l := range rr.lists[pod] {
		if !l.at.Before(since) && slices.Contains(l.models, name) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

// last is what it listed last and the end of its log, for a failure.
func (rr *realRouter) last() string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	log := rr.stderr.String()
	if len(log) > 2000 {
		log = log[len(log)-2000:]
	}
	return fmt.Sprintf("listed %v; log: %s", rr.lists, log)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
