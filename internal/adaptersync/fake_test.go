package adaptersync

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeEngine implements GET /v1/models, POST /v1/load_lora_adapter and
// /v1/unload_lora_adapter as vLLM v0.10.0 does
// (vllm/entrypoints/openai/serving_models.py:102-222, api_server.py:538,1176-1203;
// stack/testdata/upstream/lora-runtime.md): the same status codes, error
// types and messages, and the flat ErrorResponse of that release; nested
// switches to the {"error": {...}} body of later releases.
type fakeEngine struct {
	mu        sync.Mutex
	model     string // --model
	served    string // --served-model-name
	maxRank   int
	adapters  map[string]string // name → path, in load order below
	order     []string
	nested    bool
	noRuntime bool
	loads     int
	unloads   int
	srv       *httptest.Server
}

func newFakeEngine(t *testing.T, model string) *fakeEngine {
	e := &fakeEngine{model: model, served: model, maxRank: 16, adapters: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", e.models)
	mux.HandleFunc("POST /v1/load_lora_adapter", e.load)
	mux.HandleFunc("POST /v1/unload_lora_adapter", e.unload)
	e.srv = httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(e.srv.Close)
	return e
}

// restart is the engine's container restarting: no adapter is loaded.
func (e *fakeEngine) restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.adapters, e.order = map[string]string{}, nil
}

func (e *fakeEngine) loaded() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for k, v := range e.adapters {
		out[k] = v
	}
	return out
}

func (e *fakeEngine) models(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	type card struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int     `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        *string `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen *int    `json:"max_model_len"`
		Permission  []any   `json:"permission"`
	}
	l := 4096
	model, served := e.model, e.served
	data := []card{{ID: served, Object: "model", Created: 1, OwnedBy: "vllm", Root: &model, MaxModelLen: &l, Permission: []any{map[string]any{"object": "model_permission"}}}}
	for _, n := range e.order {
		p := e.adapters[n]
		data = append(data, card{ID: n, Object: "model", Created: 1, OwnedBy: "vllm", Root: &p, Parent: &served, Permission: []any{}})
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data})
}

func (e *fakeEngine) fail(w http.ResponseWriter, code int, typ, msg string) {
	if e.nested {
		writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
		return
	}
	writeJSON(w, code, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

func (e *fakeEngine) load(w http.ResponseWriter, r *http.Request) {
	if e.noRuntime { // the route is not registered
		writeJSON(w, 404, map[string]any{"detail": "Not Found"})
		return
	}
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil {
		writeJSON(w, 422, map[string]any{"detail": []any{map[string]any{"msg": "invalid"}}})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loads++
	if req.Name == "" || req.Path == "" {
		e.fail(w, 400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
		return
	}
	if _, ok := e.adapters[req.Name]; ok {
		e.fail(w, 400, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded.", req.Name))
		return
	}
	b, err := os.ReadFile(filepath.Join(req.Path, "adapter_config.json"))
	if err != nil {
		e.fail(w, 404, "NotFoundError", fmt.Sprintf("Loading lora %s failed: No adapter found for %s", req.Name, req.Path))
		return
	}
	var cfg struct {
		R int `json:"r"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		e.fail(w, 400, "BadRequestError", err.Error())
		return
	}
	if cfg.R > e.maxRank {
		e.fail(w, 400, "BadRequestError", fmt.Sprintf("LoRA rank %d is greater than max_lora_rank %d.", cfg.R, e.maxRank))
		return
	}
	e.adapters[req.Name] = req.Path
	e.order = append(e.order, req.Name)
	w.WriteHeader(200)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

func (e *fakeEngine) unload(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unloads++
	if req.Name == "" {
		e.fail(w, 400, "InvalidUserInput", "'lora_name' needs to be provided to unload a LoRA adapter.")
		return
	}
	if _, ok := e.adapters[req.Name]; !ok {
		e.fail(w, 404, "NotFoundError", fmt.Sprintf("The lora adapter '%s' cannot be found.", req.Name))
		return
	}
	delete(e.adapters, req.Name)
	for i, n := range e.order {
		if n == req.Name {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
	w.WriteHeader(200)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// fakeHub serves repositories as the hub's API and resolve URLs do.
type fakeHub struct {
	mu     sync.Mutex
	repos  map[string]map[string]string // "repo@rev" → file → content
	gated  map[string]bool              // repos that need the token
	token  string
	broken map[string]bool // files answered with 500
	gets   int
	srv    *httptest.Server
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{repos: map[string]map[string]string{}, gated: map[string]bool{}, broken: map[string]bool{}, token: "hf_secret"}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *fakeHub) add(repo, rev string, files map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repo+"@"+rev] = files
}

func adapterConfig(base string, rank int) string {
	return fmt.Sprintf(`{"base_model_name_or_path": %q, "peft_type": "LORA", "r": %d, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}`, base, rank)
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gets++
	p := r.URL.EscapedPath()
	var repo, rev, file string
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		i := strings.Index(rest, "/revision/")
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		repo, rev = rest[:i], rest[i+len("/revision/"):]
	} else {
		i := strings.Index(p, "/resolve/")
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		repo = strings.TrimPrefix(p[:i], "/")
		rest := p[i+len("/resolve/"):]
		j := strings.Index(rest, "/")
		if j < 0 {
			http.NotFound(w, r)
			return
		}
		rev, file = rest[:j], rest[j+1:]
	}
	files, ok := h.repos[repo+"@"+rev]
	if h.gated[repo] && r.Header.Get("Authorization") != "Bearer "+h.token {
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":"Access to model is restricted."}`)
		return
	}
	if !ok {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":"Repository not found"}`)
		return
	}
	if file == "" {
		var sib []map[string]string
		for f := range files {
			sib = append(sib, map[string]string{"rfilename": f})
		}
		writeJSON(w, 200, map[string]any{"id": repo, "sha": "0123", "siblings": sib})
		return
	}
	if h.broken[repo+"/"+file] {
		w.WriteHeader(500)
		fmt.Fprint(w, "Internal Error")
		return
	}
	c, ok := files[file]
	if !ok {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":"Entry not found"}`)
		return
	}
	fmt.Fprint(w, c)
}

// fakePod records the annotation patches.
type fakePod struct {
	mu      sync.Mutex
	patches []map[string]string
	ann     map[string]string
	err     error
}

func (p *fakePod) PatchAnnotations(_ context.Context, a map[string]string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.ann == nil {
		p.ann = map[string]string{}
	}
	cp := map[string]string{}
	for k, v := range a {
		cp[k] = v
		p.ann[k] = v
	}
	p.patches = append(p.patches, cp)
	return nil
}
