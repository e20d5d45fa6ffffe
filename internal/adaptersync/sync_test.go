package adaptersync

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const base = "meta-llama/Llama-3.1-8B-Instruct"

type rig struct {
	t      *testing.T
	engine *fakeEngine
	hub    *fakeHub
	pod    *fakePod
	s      *Syncer
	clock  time.Time
	cache  string
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, engine: newFakeEngine(t, base), hub: newFakeHub(t), pod: &fakePod{}, clock: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)}
	r.cache = t.TempDir()
	r.s = &Syncer{
		ConfigFile: filepath.Join(t.TempDir(), "adapters.json"),
		Dir:        filepath.Join(r.cache, "lora-adapters"),
		Engine:     &Engine{URL: r.engine.srv.URL},
		Hub:        &Hub{URL: r.hub.srv.URL, Token: r.hub.token},
		Pod:        r.pod,
		Now:        func() time.Time { r.clock = r.clock.Add(time.Millisecond); return r.clock },
	}
	r.hub.add("acme/sql-lora", "main", map[string]string{
		"adapter_config.json":       adapterConfig(base, 8),
		"adapter_model.safetensors": "weights",
		"README.md":                 "readme",
	})
	return r
}

func (r *rig) want(list string) {
	r.t.Helper()
	if err := os.WriteFile(r.s.ConfigFile, []byte(list), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) sync() {
	r.t.Helper()
	if err := r.s.Reconcile(context.Background()); err != nil {
		r.t.Fatalf("Reconcile: %v", err)
	}
}

func (r *rig) status() map[string]string {
	r.t.Helper()
	var st map[string]string
	if err := json.Unmarshal([]byte(r.pod.ann[AnnotationStatus]), &st); err != nil {
		r.t.Fatalf("status annotation %q: %v", r.pod.ann[AnnotationStatus], err)
	}
	return st
}

func (r *rig) bumps() int {
	n := 0
	for _, p := range r.pod.patches {
		if _, ok := p[AnnotationModified]; ok {
			n++
		}
	}
	return n
}

// localAdapter writes an adapter onto the model cache and returns its path.
func (r *rig) localAdapter(name, baseModel string, rank int) string {
	d := filepath.Join(r.cache, "adapters", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "adapter_config.json"), []byte(adapterConfig(baseModel, rank)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return d
}

func TestLoadUnload(t *testing.T) {
	r := newRig(t)
	local := r.localAdapter("local", base, 16)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}},{"name":"local","source":{"path":"` + local + `"}}]`)
	r.sync()
	got := r.engine.loaded()
	if got["sql"] != filepath.Join(r.s.Dir, "sql") || got["local"] != local || len(got) != 2 {
		t.Fatalf("engine has %v", got)
	}
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		if _, err := os.Stat(filepath.Join(r.s.Dir, "sql", f)); err != nil {
			t.Errorf("downloaded %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(r.s.Dir, "sql", "README.md")); err == nil {
		t.Errorf("README.md downloaded")
	}
	if st := r.status(); st["sql"] != Loaded || st["local"] != Loaded {
		t.Errorf("status %v", st)
	}
	ts := r.pod.ann[AnnotationModified]
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || r.bumps() != 1 {
		t.Errorf("lora-modified %q (%v), %d bumps", ts, err, r.bumps())
	}

	// Drop one: it is unloaded, the other kept, the router told again.
	r.want(`[{"name":"local","source":{"path":"` + local + `"}}]`)
	r.sync()
	if got := r.engine.loaded(); len(got) != 1 || got["local"] == "" {
		t.Fatalf("after unload the engine has %v", got)
	}
	if st := r.status(); len(st) != 1 || st["local"] != Loaded {
		t.Errorf("status %v", st)
	}
	if r.bumps() != 2 || r.pod.ann[AnnotationModified] <= ts {
		t.Errorf("%d bumps, lora-modified %q after %q", r.bumps(), r.pod.ann[AnnotationModified], ts)
	}

	r.want(`[]`)
	r.sync()
	if got := r.engine.loaded(); len(got) != 0 {
		t.Fatalf("engine still has %v", got)
	}
}

// TestIdempotent: nothing changed, nothing patched, nothing downloaded.
func TestIdempotent(t *testing.T) {
	r := newRig(t)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora","revision":"main"}}}]`)
	r.sync()
	patches, gets, loads := len(r.pod.patches), r.hub.gets, r.engine.loads
	for range 3 {
		r.sync()
	}
	if len(r.pod.patches) != patches || r.hub.gets != gets || r.engine.loads != loads {
		t.Errorf("patches %d→%d, hub GETs %d→%d, loads %d→%d", patches, len(r.pod.patches), gets, r.hub.gets, loads, r.engine.loads)
	}
	// A second syncer on the same cache (another replica, or this one
	// restarted) reuses the download.
	s2 := *r.s
	s2.managed, s2.failures, s2.lastStatus = nil, nil, ""
	r.engine.restart()
	if err := s2.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.hub.gets != gets || r.engine.loaded()["sql"] == "" {
		t.Errorf("hub GETs %d→%d, engine %v", gets, r.hub.gets, r.engine.loaded())
	}
}

// TestEngineRestart: the engine comes back without adapters; they come back.
func TestEngineRestart(t *testing.T) {
	r := newRig(t)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	r.sync()
	r.engine.restart()
	r.sync()
	if r.engine.loaded()["sql"] == "" {
		t.Fatalf("adapter not back after a restart")
	}
	if r.bumps() != 2 {
		t.Errorf("%d bumps, want 2: the router must re-read /v1/models", r.bumps())
	}
	if st := r.status(); st["sql"] != Loaded {
		t.Errorf("status %v", st)
	}
}

// TestEngineNotUp: the engine not answering is an error for Run to retry,
// and the pod is not touched.
func TestEngineNotUp(t *testing.T) {
	r := newRig(t)
	r.want(`[]`)
	r.engine.srv.Close()
	err := r.s.Reconcile(context.Background())
	if err == nil || !strings.Contains(err.Error(), "asking the engine") || len(r.pod.patches) != 0 {
		t.Errorf("err %v, patches %v", err, r.pod.patches)
	}
}

func TestDownloadFailure(t *testing.T) {
	r := newRig(t)
	r.hub.add("acme/broken", "v1", map[string]string{"adapter_config.json": adapterConfig(base, 8), "adapter_model.safetensors": "w"})
	r.hub.broken["acme/broken/adapter_model.safetensors"] = true
	r.hub.gated["acme/gated"] = true
	r.hub.add("acme/gated", "main", map[string]string{"adapter_config.json": adapterConfig(base, 8)})
	r.s.Hub.Token = ""
	r.want(`[{"name":"broken","source":{"huggingFace":{"repo":"acme/broken","revision":"v1"}}},
		{"name":"missing","source":{"huggingFace":{"repo":"acme/nope"}}},
		{"name":"gated","source":{"huggingFace":{"repo":"acme/gated"}}},
		{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	r.sync()
	st := r.status()
	for name, want := range map[string]string{
		"broken":  "download failed: hub: GET " + r.hub.srv.URL + "/acme/broken/resolve/v1/adapter_model.safetensors: 500 Internal Error",
		"missing": "download failed: hub: GET " + r.hub.srv.URL + "/api/models/acme/nope/revision/main: 404 not found",
		"gated":   "no access (gated or private: is the token set?)",
		"sql":     Loaded,
	} {
		if !strings.Contains(st[name], want) {
			t.Errorf("status[%s] = %q, want it to contain %q", name, st[name], want)
		}
	}
	if _, err := os.Stat(filepath.Join(r.s.Dir, "broken")); err == nil {
		t.Errorf("a partial download was left at %s/broken", r.s.Dir)
	}
	if left, _ := filepath.Glob(filepath.Join(r.s.Dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary directories left: %v", left)
	}

	// Backoff: the next pass does not hit the hub again; after the wait it
	// does, and succeeds once the hub does.
	gets := r.hub.gets
	r.sync()
	if r.hub.gets != gets {
		t.Errorf("retried before the backoff: %d → %d GETs", gets, r.hub.gets)
	}
	r.hub.broken = map[string]bool{}
	r.clock = r.clock.Add(time.Minute)
	r.sync()
	if st := r.status(); st["broken"] != Loaded {
		t.Errorf("after the hub recovered: %q", st["broken"])
	}
}

// TestBoundedRetries: an adapter that keeps failing is tried MaxAttempts
// times, then left until its source changes.
func TestBoundedRetries(t *testing.T) {
	r := newRig(t)
	r.s.MaxAttempts = 3
	r.want(`[{"name":"x","source":{"huggingFace":{"repo":"acme/nope"}}}]`)
	for range 10 {
		r.sync()
		r.clock = r.clock.Add(time.Hour)
	}
	if n := r.hub.gets; n != 3 {
		t.Errorf("%d hub requests, want 3", n)
	}
	if st := r.status(); !strings.HasPrefix(st["x"], "gave up after 3 attempts: download failed") {
		t.Errorf("status %q", st["x"])
	}
	r.hub.add("acme/nope", "v2", map[string]string{"adapter_config.json": adapterConfig(base, 8)})
	r.want(`[{"name":"x","source":{"huggingFace":{"repo":"acme/nope","revision":"v2"}}}]`)
	r.sync()
	if st := r.status(); st["x"] != Loaded {
		t.Errorf("after the source changed: %q", st["x"])
	}
}

func TestBaseModelMismatch(t *testing.T) {
	r := newRig(t)
	other := r.localAdapter("other", "mistralai/Mistral-7B-v0.1", 8)
	served := r.localAdapter("served", "llama", 8) // the served name
	r.engine.served = "llama"
	noConfig := filepath.Join(r.cache, "adapters", "empty")
	if err := os.MkdirAll(noConfig, 0o755); err != nil {
		t.Fatal(err)
	}
	r.want(`[{"name":"other","source":{"path":"` + other + `"}},{"name":"served","source":{"path":"` + served + `"}},{"name":"empty","source":{"path":"` + noConfig + `"}}]`)
	r.sync()
	st := r.status()
	if want := `base model mismatch: adapter_config.json's base_model_name_or_path is "mistralai/Mistral-7B-v0.1", the engine serves "llama" (--model "` + base + `")`; st["other"] != want {
		t.Errorf("status[other] = %q\nwant %q", st["other"], want)
	}
	if st["served"] != Loaded {
		t.Errorf("status[served] = %q", st["served"])
	}
	if want := "no adapter_config.json in " + noConfig; st["empty"] != want {
		t.Errorf("status[empty] = %q, want %q", st["empty"], want)
	}
	if _, ok := r.engine.loaded()["other"]; ok {
		t.Errorf("the mismatched adapter was sent to the engine")
	}
}

// TestEngineRefuses: the engine's own refusal (rank above --max-lora-rank)
// becomes the adapter's reason, in both error body shapes.
func TestEngineRefuses(t *testing.T) {
	for _, nested := range []bool{false, true} {
		r := newRig(t)
		r.engine.nested = nested
		big := r.localAdapter("big", base, 64)
		r.want(`[{"name":"big","source":{"path":"` + big + `"}}]`)
		r.sync()
		want := "load failed: engine refused (400 BadRequestError): LoRA rank 64 is greater than max_lora_rank 16."
		if st := r.status(); st["big"] != want {
			t.Errorf("nested=%v: status %q, want %q", nested, st["big"], want)
		}
		if r.bumps() != 0 {
			t.Errorf("nested=%v: lora-modified bumped with nothing loaded", nested)
		}
	}
}

// TestNoRuntimeLoRA: without VLLM_ALLOW_RUNTIME_LORA_UPDATING the route
// does not exist (FastAPI's 404 {"detail":"Not Found"}); the reason says
// what to set.
func TestNoRuntimeLoRA(t *testing.T) {
	r := newRig(t)
	r.engine.noRuntime = true
	a := r.localAdapter("a", base, 8)
	r.want(`[{"name":"a","source":{"path":"` + a + `"}}]`)
	r.sync()
	if st := r.status(); !strings.Contains(st["a"], "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True") {
		t.Errorf("status %q", st["a"])
	}
}

// TestUnmanagedKept: an adapter loaded at start-up (--lora-modules) from
// outside the download directory is not this program's to unload.
func TestUnmanagedKept(t *testing.T) {
	r := newRig(t)
	r.engine.adapters["static"] = "/models/static"
	r.engine.order = []string{"static"}
	r.want(`[]`)
	r.sync()
	if r.engine.loaded()["static"] == "" || r.engine.unloads != 0 {
		t.Errorf("a start-up adapter was unloaded")
	}
	// One left in the download directory by an earlier run is.
	r.engine.restart()
	r.engine.adapters["old"] = filepath.Join(r.s.Dir, "old")
	r.engine.order = []string{"old"}
	r.sync()
	if len(r.engine.loaded()) != 0 || r.bumps() != 1 {
		t.Errorf("engine %v, %d bumps", r.engine.loaded(), r.bumps())
	}
}

// TestBadInput: a file that cannot be parsed changes nothing; a bad entry
// is reported under its name (or index) while the others sync; every
// message is bounded.
func TestBadInput(t *testing.T) {
	r := newRig(t)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	r.sync()
	for _, bad := range []string{``, `{`, `{"name":"x"}`, `[{"name":"x","sauce":{}}]`, `[] []`, strings.Repeat(" ", maxConfigBytes+1)} {
		r.want(bad)
		err := r.s.Reconcile(context.Background())
		if err == nil || !strings.Contains(err.Error(), "reading the adapters") {
			t.Errorf("%.20q: err %v", bad, err)
		}
		if r.engine.loaded()["sql"] == "" {
			t.Fatalf("%.20q unloaded what was loaded", bad)
		}
	}
	long := strings.Repeat("é", 5000)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}},
		{"name":"","source":{"path":"/x"}},
		{"name":"../etc","source":{"path":"/x"}},
		{"name":"a/b","source":{"path":"/x"}},
		{"name":"both","source":{"path":"/x","huggingFace":{"repo":"a/b"}}},
		{"name":"neither","source":{}},
		{"name":"rel","source":{"path":"x/y"}},
		{"name":"dots","source":{"path":"/data/../etc"}},
		{"name":"repo","source":{"huggingFace":{"repo":"a/b/c"}}},
		{"name":"long","source":{"huggingFace":{"repo":"` + long + `"}}},
		{"name":"` + long + `","source":{"path":"/x"}},
		{"name":"twice","source":{"path":"/x"}},
		{"name":"twice","source":{"path":"/y"}}]`)
	r.sync()
	st := r.status()
	for k, want := range map[string]string{
		"sql":     Loaded,
		"[1]":     "name is empty",
		"[2]":     `name "../etc" starts with '.'`,
		"both":    "source has both huggingFace and path; give one",
		"neither": "source has neither huggingFace nor path",
		"rel":     `source.path "x/y" is not absolute`,
		"dots":    `source.path "/data/../etc" has '..'`,
		"repo":    `source.huggingFace.repo "a/b/c" is not <owner>/<name> or <name>`,
		"[3]":     `name "a/b" has '/', '\' or NUL`,
		"[10]":    "name is longer than 253 characters",
		"twice":   "listed more than once",
	} {
		if st[k] != want {
			t.Errorf("status[%s] = %q, want %q", k, st[k], want)
		}
	}
	for k, v := range st {
		if len([]rune(v)) > maxReason {
			t.Errorf("status[%.20s] is %d characters", k, len([]rune(v)))
		}
	}
}

// TestStatusBounded: the status annotation stays small whatever the count.
func TestStatusBounded(t *testing.T) {
	st := map[string]string{}
	for i := range maxAdapters {
		st[strings.Repeat("n", 200)+string(rune('a'+i%26))+strings.Repeat("x", i%50)+"-"+itoa(i)] = strings.Repeat("reason ", 40)
	}
	if b := statusJSON(st); len(b) > maxStatusBytes {
		t.Errorf("status is %d bytes", len(b))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestPatchFailureRetried: a failed patch keeps the bump pending.
func TestPatchFailureRetried(t *testing.T) {
	r := newRig(t)
	r.pod.err = errors.New("forbidden")
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	if err := r.s.Reconcile(context.Background()); err == nil {
		t.Fatal("no error from a failed patch")
	}
	r.pod.err = nil
	r.sync()
	if r.bumps() != 1 || r.status()["sql"] != Loaded {
		t.Errorf("%d bumps, status %v", r.bumps(), r.pod.ann)
	}
	r.sync()
	if r.bumps() != 1 {
		t.Errorf("bumped again with nothing changed")
	}
}

// TestSourceChanged: a new revision under the same name is downloaded and
// replaces the loaded adapter.
func TestSourceChanged(t *testing.T) {
	r := newRig(t)
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora"}}}]`)
	r.sync()
	r.hub.add("acme/sql-lora", "v2", map[string]string{"adapter_config.json": adapterConfig(base, 8), "adapter_model.safetensors": "weights v2"})
	r.want(`[{"name":"sql","source":{"huggingFace":{"repo":"acme/sql-lora","revision":"v2"}}}]`)
	r.sync()
	b, _ := os.ReadFile(filepath.Join(r.s.Dir, "sql", "adapter_model.safetensors"))
	if string(b) != "weights v2" || r.engine.unloads != 1 || r.engine.loaded()["sql"] == "" || r.bumps() != 2 {
		t.Errorf("weights %q, %d unloads, engine %v, %d bumps", b, r.engine.unloads, r.engine.loaded(), r.bumps())
	}
}
