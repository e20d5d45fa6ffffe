package e2e

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// llmdPickerRelease is the llm-d release whose picker TestLLMDPickerPDConfig
// builds: the function's default picker.
const llmdPickerRelease = "v0.10.0"

// llmdRunnerTest is a test of ours, put into llm-d's cmd/epp/runner package
// (which has the picker's configuration loading, unexported) in a temporary
// copy: it loads the configuration in VLLM_STACK_CONFIG as the picker does at
// start (parseConfigurationPhaseOne: strict decoding, feature gates;
// parseConfigurationPhaseTwo: every plugin instantiated with its parameters,
// the scheduler's profiles and profile handler built, missing data producers
// created, data dependencies ordered), then configures the data layer, the
// way llm-d's own cmd/epp/runner/feature_gate_test.go drives them.
const llmdRunnerTest = `package runner

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/llm-d/llm-d-router/pkg/epp/datastore"
	runserver "github.com/llm-d/llm-d-router/pkg/epp/server"
)

func TestVLLMStackConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := os.ReadFile(os.Getenv("VLLM_STACK_CONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	opts := runserver.NewOptions()
	opts.ConfigText = string(b)
	opts.PoolName = "pool"
	r := NewRunner()
	raw, err := r.parseConfigurationPhaseOne(ctx, opts)
	if err != nil {
		t.Fatalf("phase one: %v", err)
	}
	ds := datastore.NewDatastore(ctx, r.setupMetricsCollection(opts))
	cfg, err := r.parseConfigurationPhaseTwo(ctx, raw, ds)
	if err != nil {
		t.Fatalf("phase two: %v", err)
	}
	if err := r.dlRuntime.Configure(cfg.DataConfig, setupLog); err != nil {
		t.Fatalf("data layer: %v", err)
	}
	fmt.Println("SCHEDULER", cfg.SchedulerConfig.String())
	for _, p := range r.PluginHandle.GetAllPlugins() {
		fmt.Println("PLUGIN", p.TypedName().Type, p.TypedName().Name)
	}
}
`

// TestLLMDPickerPDConfig: llm-d's picker at llmdPickerRelease accepts the
// configuration the function renders for a disaggregated model
// (example/stacks/disaggregated-inference-extension.yaml), and schedules
// with the disagg-profile-handler over a prefill and a decode profile. The
// picker's source is read from a git repository of llm-d/llm-d-router
// (LLMD_SRC, or the development VM's mirror) into a temporary directory, never
// copied into this repository; without one the test skips. Building it
// needs its modules from the Go module proxy (minutes, cold).
func TestLLMDPickerPDConfig(t *testing.T) {
	src := cmp.Or(os.Getenv("LLMD_SRC"), "/work/.mirror/llm-d+llm-d-router/repo")
	dir := t.TempDir()
	archive := exec.Command("git", "--git-dir="+src, "archive", llmdPickerRelease)
	tarball, err := archive.Output()
	if err != nil {
		t.Skipf("no %s of llm-d/llm-d-router in %s (set LLMD_SRC to a git repository of it): %v", llmdPickerRelease, src, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}

	xr := readYAML(t, "../example/stacks/disaggregated-inference-extension.yaml")
	xr["metadata"].(map[string]any)["namespace"] = "llm"
	rsp := render(t, xr, compositionInput(t, "../composition/composition.yaml"), nil)
	var config string
	for _, r := range rsp.GetDesired().GetResources() {
		o := r.GetResource().AsMap()
		if o["kind"] != "ConfigMap" {
			continue
		}
		if c, _ := o["data"].(map[string]any)["config.yaml"].(string); strings.Contains(c, "disagg-profile-handler") {
			config = c
		}
	}
	if config == "" {
		t.Fatal("the function rendered no picker configuration with the disagg-profile-handler")
	}
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd", "epp", "runner", "zz_vllm_stack_test.go"), []byte(llmdRunnerTest), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", "^TestVLLMStackConfig$", "./cmd/epp/runner/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "VLLM_STACK_CONFIG="+cfgFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llm-d %s's picker refuses the rendered configuration: %v\n%s\nconfiguration:\n%s", llmdPickerRelease, err, out, config)
	}
	var scheduler string
	var plugins []string
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "SCHEDULER "); ok {
			scheduler = s
		}
		if p, ok := strings.CutPrefix(line, "PLUGIN "); ok {
			plugins = append(plugins, p)
		}
	}
	for _, want := range []string{"disagg-profile-handler", "prefill:", "decode:"} {
		if !strings.Contains(scheduler, want) {
			t.Errorf("the picker's scheduler %q has no %s", scheduler, want)
		}
	}
	t.Logf("llm-d %s's picker loaded the configuration: scheduler %s; plugins %v", llmdPickerRelease, scheduler, plugins)
}
