package adaptersync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// AnnotationModified is the production-stack router's convention: its
	// LoRA controller sets it after each load so the router's pod watch sees
	// a MODIFIED event and re-reads /v1/models.
	AnnotationModified = "lora-modified"
	// AnnotationStatus is each desired adapter's state: name → "loaded" or
	// the reason it is not.
	AnnotationStatus = "vllm.ai/lora-adapters"
	// Loaded is an adapter's status once the engine lists it.
	Loaded = "loaded"

	maxStatusBytes = 64 << 10
)

// Syncer makes the engine's adapters match the mounted file.
type Syncer struct {
	ConfigFile string
	Dir        string // where Hugging Face adapters are downloaded: Dir/<name>/
	Engine     *Engine
	Hub        *Hub
	Pod        PodPatcher
	Log        *slog.Logger
	Now        func() time.Time
	// MaxAttempts an adapter is tried before the program waits for its
	// source to change (or the engine to restart); 0 means 6.
	MaxAttempts int
	// RetryBase is the first wait after a failure, doubled per attempt up
	// to RetryMax; 0 means 5s and 5m.
	RetryBase, RetryMax time.Duration

	managed     map[string]bool
	failures    map[string]*failure
	lastStatus  string
	bumpPending bool
}

type failure struct {
	key      string
	attempts int
	next     time.Time
	reason   string
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Run reconciles every interval until ctx ends; while the engine or the file
// is not there yet it retries sooner, backing off from 1s up to interval.
func (s *Syncer) Run(ctx context.Context, interval time.Duration) error {
	backoff := time.Second
	for {
		wait := interval
		if err := s.Reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log().Warn("sync failed, will retry", "error", clip(err.Error()), "in", backoff.String())
			wait = min(backoff, interval)
			backoff = min(backoff*2, interval)
		} else {
			backoff = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Reconcile is one pass: read the file and the engine, download, load,
// unload, then patch the pod when something changed.
func (s *Syncer) Reconcile(ctx context.Context) error {
	if s.managed == nil {
		s.managed, s.failures = map[string]bool{}, map[string]*failure{}
	}
	desired, status, err := ReadConfig(s.ConfigFile)
	if err != nil {
		return fmt.Errorf("reading the adapters: %w", err)
	}
	models, err := s.Engine.Models(ctx)
	if err != nil {
		return fmt.Errorf("asking the engine: %w", err)
	}
	// An adapter this program loaded is gone without it unloading it: the
	// engine restarted (or someone unloaded it). Try everything afresh.
	for name := range s.managed {
		if _, ok := models.Adapters[name]; !ok {
			s.log().Info("adapter no longer loaded, the engine may have restarted", "adapter", name)
			clear(s.failures)
			delete(s.managed, name)
		}
	}
	changed := false
	want := map[string]bool{}
	for name := range status { // invalid entries: leave what is loaded alone
		want[name] = true
	}
	for _, a := range desired {
		want[a.Name] = true
		st, ch := s.syncOne(ctx, a, models)
		status[a.Name] = st
		changed = changed || ch
	}
	for name, card := range models.Adapters {
		if want[name] || !(s.managed[name] || within(card.root(), s.Dir)) {
			continue
		}
		err := s.Engine.Unload(ctx, name)
		var ee *EngineError
		if errors.As(err, &ee) && ee.Status == http.StatusNotFound && ee.Type == "NotFoundError" {
			err = nil // already gone
		}
		if err != nil {
			s.log().Warn("unloading failed, will retry", "adapter", name, "error", clip(err.Error()))
			continue
		}
		s.log().Info("unloaded", "adapter", name)
		delete(s.managed, name)
		changed = true
	}
	return s.patch(ctx, changed, status)
}

// syncOne brings one adapter to loaded, or says why not.
func (s *Syncer) syncOne(ctx context.Context, a Adapter, models Models) (string, bool) {
	key, path := s.source(a)
	card, loaded := models.Adapters[a.Name]
	if loaded && card.root() == path && s.fetched(a, key) {
		s.managed[a.Name] = true
		delete(s.failures, a.Name)
		return Loaded, false
	}
	f := s.failures[a.Name]
	if f != nil && f.key == key && (f.attempts >= s.maxAttempts() || s.now().Before(f.next)) {
		return f.reason, false
	}
	changed := false
	if loaded { // another source under the same name: replace it
		if err := s.Engine.Unload(ctx, a.Name); err != nil {
			return s.fail(a.Name, key, fmt.Errorf("unloading the adapter loaded from %q: %w", card.root(), err)), false
		}
		delete(s.managed, a.Name)
		changed = true
	}
	if a.Source.HuggingFace != nil {
		s.log().Info("downloading", "adapter", a.Name, "repo", a.Source.HuggingFace.Repo, "revision", a.Source.HuggingFace.Revision)
		p, err := s.Hub.Fetch(ctx, s.Dir, a.Name, *a.Source.HuggingFace)
		if err != nil {
			return s.fail(a.Name, key, fmt.Errorf("download failed: %w", err)), changed
		}
		path = p
	}
	if err := checkAdapterDir(path, models.Base); err != nil {
		return s.fail(a.Name, key, err), changed
	}
	err := s.Engine.Load(ctx, a.Name, path)
	var ee *EngineError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Status == http.StatusBadRequest && strings.Contains(ee.Message, "has already been loaded"):
		// Loaded meanwhile under this name (another caller): keep it.
	case errors.As(err, &ee) && ee.Status == http.StatusNotFound && ee.Type == "":
		return s.fail(a.Name, key, errors.New("the engine has no /v1/load_lora_adapter: it needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora")), changed
	default:
		return s.fail(a.Name, key, fmt.Errorf("load failed: %w", err)), changed
	}
	s.log().Info("loaded", "adapter", a.Name, "path", path)
	s.managed[a.Name] = true
	delete(s.failures, a.Name)
	return Loaded, true
}

func (s *Syncer) maxAttempts() int {
	if s.MaxAttempts > 0 {
		return s.MaxAttempts
	}
	return 6
}

// fail records a failure and schedules the next attempt.
func (s *Syncer) fail(name, key string, err error) string {
	f := s.failures[name]
	if f == nil || f.key != key {
		f = &failure{key: key}
		s.failures[name] = f
	}
	f.attempts++
	base, maxWait := s.RetryBase, s.RetryMax
	if base <= 0 {
		base = 5 * time.Second
	}
	if maxWait <= 0 {
		maxWait = 5 * time.Minute
	}
	wait := base << min(f.attempts-1, 20)
	if wait <= 0 || wait > maxWait {
		wait = maxWait
	}
	f.next = s.now().Add(wait)
	f.reason = clip(err.Error())
	if f.attempts >= s.maxAttempts() {
		f.reason = clip(fmt.Sprintf("gave up after %d attempts: %s", f.attempts, err))
	}
	s.log().Warn("adapter not loaded", "adapter", name, "attempt", f.attempts, "error", f.reason)
	return f.reason
}

// source is an adapter's identity (a change means download and load again)
// and the path the engine loads it from.
func (s *Syncer) source(a Adapter) (key, path string) {
	if hf := a.Source.HuggingFace; hf != nil {
		return "hf:" + hf.Repo + "@" + hf.Revision, filepath.Join(s.Dir, a.Name)
	}
	return "path:" + a.Source.Path, a.Source.Path
}

// fetched: a Hugging Face adapter's directory holds that repo and revision.
func (s *Syncer) fetched(a Adapter, key string) bool {
	hf := a.Source.HuggingFace
	if hf == nil {
		return true
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, a.Name, sourceMarker))
	return err == nil && "hf:"+string(b) == key
}

// checkAdapterDir refuses what the engine would: no adapter_config.json, a
// PEFT type other than LoRA, or another base model than the one it serves
// (compared with the --model value, as vLLM's filesystem resolver does, and
// with the served names).
func checkAdapterDir(dir string, base []Card) error {
	f, err := os.Open(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no adapter_config.json in %s", dir)
		}
		return err
	}
	defer f.Close()
	var cfg struct {
		PEFTType *string `json:"peft_type"`
		Base     *string `json:"base_model_name_or_path"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxConfigBytes)).Decode(&cfg); err != nil {
		return fmt.Errorf("adapter_config.json in %s: %w", dir, err)
	}
	if cfg.PEFTType != nil && *cfg.PEFTType != "LORA" {
		return fmt.Errorf("adapter_config.json: peft_type is %q, not LORA", clip(*cfg.PEFTType))
	}
	if cfg.Base == nil || *cfg.Base == "" {
		return errors.New("adapter_config.json has no base_model_name_or_path")
	}
	var served []string
	for _, c := range base {
		if *cfg.Base == c.ID || *cfg.Base == c.root() {
			return nil
		}
		served = append(served, fmt.Sprintf("%q (--model %q)", c.ID, c.root()))
	}
	return fmt.Errorf("base model mismatch: adapter_config.json's base_model_name_or_path is %q, the engine serves %s",
		clip(*cfg.Base), clip(strings.Join(served, ", ")))
}

func within(p, dir string) bool {
	if p == "" || dir == "" {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// patch bumps lora-modified after any change and writes the status when it
// differs from what was last written; nothing when neither.
func (s *Syncer) patch(ctx context.Context, changed bool, status map[string]string) error {
	st := statusJSON(status)
	ann := map[string]string{}
	if changed || s.bumpPending {
		ann[AnnotationModified] = s.now().UTC().Format(time.RFC3339Nano)
	}
	if st != s.lastStatus {
		ann[AnnotationStatus] = st
	}
	if len(ann) == 0 {
		return nil
	}
	if err := s.Pod.PatchAnnotations(ctx, ann); err != nil {
		s.bumpPending = s.bumpPending || changed
		return fmt.Errorf("patching the pod: %w", err)
	}
	s.lastStatus, s.bumpPending = st, false
	return nil
}

// statusJSON is the status annotation, at most maxStatusBytes.
func statusJSON(status map[string]string) string {
	b, _ := json.Marshal(status)
	if len(b) <= maxStatusBytes {
		return string(b)
	}
	short := make(map[string]string, len(status))
	loaded := 0
	for k, v := range status {
		if v == Loaded {
			loaded++
			short[k] = v
		} else {
			short[k] = "not loaded (see the adapter-sync container's log)"
		}
	}
	if b, _ = json.Marshal(short); len(b) <= maxStatusBytes {
		return string(b)
	}
	b, _ = json.Marshal(map[string]string{"": fmt.Sprintf("%d adapters, %d loaded (too many to list)", len(status), loaded)})
	return string(b)
}
