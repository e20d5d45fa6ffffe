package adaptersync

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// Command is `function adapter-sync`: flags in, the loop until ctx ends.
// patcher builds the pod patcher from the pod's name and namespace; nil uses
// the in-cluster one.
func Command(ctx context.Context, args []string, patcher func(name, namespace string) (PodPatcher, error)) error {
	fs := flag.NewFlagSet("adapter-sync", flag.ContinueOnError)
	var (
		config    = fs.String("config", "/etc/adapters/adapters.json", "The desired adapters: a JSON list of {name, source: {huggingFace: {repo, revision}} or {path}}.")
		engine    = fs.String("engine", "http://127.0.0.1:8000", "The vLLM engine's URL, on localhost.")
		dir       = fs.String("dir", "/data/lora-adapters", "Where Hugging Face adapters are downloaded, one directory per adapter.")
		hub       = fs.String("hf-endpoint", envOr("HF_ENDPOINT", "https://huggingface.co"), "The Hugging Face hub's base URL.")
		tokenEnv  = fs.String("hf-token-env", "HF_TOKEN", "The environment variable holding the Hugging Face token.")
		keyEnv    = fs.String("api-key-env", "VLLM_API_KEY", "The environment variable holding the engine's API key.")
		interval  = fs.Duration("interval", 10*time.Second, "How often the file and the engine are compared.")
		maxBytes  = fs.Int64("max-download-bytes", defaultMaxHub, "The most one adapter's download may be.")
		attempts  = fs.Int("max-attempts", 6, "How many times an adapter is tried before waiting for its source to change or the engine to restart.")
		podName   = fs.String("pod-name", os.Getenv("POD_NAME"), "This pod's name (downward API).")
		namespace = fs.String("pod-namespace", os.Getenv("POD_NAMESPACE"), "This pod's namespace (downward API).")
		once      = fs.Bool("once", false, "Reconcile once and exit.")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("adapter-sync takes no arguments, got %q", fs.Args())
	}
	if *interval <= 0 || *maxBytes <= 0 || *attempts <= 0 {
		return errors.New("--interval, --max-download-bytes and --max-attempts must be positive")
	}
	if patcher == nil {
		patcher = func(n, ns string) (PodPatcher, error) { return NewInClusterPatcher(n, ns) }
	}
	pod, err := patcher(*podName, *namespace)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "adapter-sync")
	s := &Syncer{
		ConfigFile:  *config,
		Dir:         *dir,
		Engine:      &Engine{URL: *engine, APIKey: os.Getenv(*keyEnv), Client: &http.Client{Timeout: 10 * time.Minute}},
		Hub:         &Hub{URL: *hub, Token: os.Getenv(*tokenEnv), MaxBytes: *maxBytes},
		Pod:         pod,
		Log:         log,
		MaxAttempts: *attempts,
	}
	if *once {
		return s.Reconcile(ctx)
	}
	log.Info("starting", "config", *config, "engine", *engine, "dir", *dir, "interval", interval.String())
	return s.Run(ctx, *interval)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
