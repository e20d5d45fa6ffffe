package stack

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

func TestModelBillions(t *testing.T) {
	cases := map[string]struct {
		want float64
		ok   bool
	}{
		"meta-llama/Llama-3.1-70B-Instruct":     {70, true},
		"meta-llama/Llama-3.2-1B-Instruct":      {1, true},
		"Qwen/Qwen2.5-0.5B-Instruct":            {0.5, true},
		"mistralai/Mixtral-8x7B-Instruct-v0.1":  {56, true},
		"openai/gpt-oss-120b":                   {120, true},
		"HuggingFaceTB/SmolLM2-135M-Instruct":   {0.135, true},
		"/models/llama-3.1-405b":                {405, true},
		"mistralai/Mistral-Small-Instruct-2409": {0, false},
		"Qwen/Qwen2-VL":                         {0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := resolve.ModelBillions(name)
			if ok != tc.ok || got != tc.want {
				t.Errorf("modelBillions(%q) = %v, %v; want %v, %v", name, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestStartupBudget: the startup probe allows 10 minutes, more for models
// whose weights take longer to download and load, at most 2 hours; an
// override of probes.startup.failureThreshold wins.
func TestStartupBudget(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want int32
	}{
		"Unknown size":     {xr: with("model.modelURL", "org/m"), want: 60},
		"Small model":      {xr: with("model.modelURL", "meta-llama/Llama-3.1-8B-Instruct"), want: 60},
		"70B: 140 GB":      {xr: with("model.modelURL", "meta-llama/Llama-3.1-70B-Instruct"), want: 170},
		"70B AWQ: 35 GB":   {xr: with("model.modelURL", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"), want: 65},
		"70B FP8: 70 GB":   {xr: with("model.modelURL", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8"), want: 100},
		"405B: capped":     {xr: with("model.modelURL", "meta-llama/Llama-3.1-405B-Instruct"), want: 720},
		"Local path":       {xr: with("model.modelURL", nil, "model.path", "/data/models/qwen2.5-32b"), want: 94},
		"Override":         {xr: with("model.modelURL", "meta-llama/Llama-3.1-70B-Instruct", "probes.startup.failureThreshold", 30), want: 30},
		"Shorter period":   {xr: with("model.modelURL", "meta-llama/Llama-3.1-70B-Instruct", "probes.startup.periodSeconds", 5), want: 340},
		"Small, period 20": {xr: with("model.modelURL", "org/m", "probes.startup.periodSeconds", 20), want: 30},
		// model.parameterCount over the name, the name's quantization kept.
		"parameterCount 70B":          {xr: with("model.modelURL", "org/m", "model.parameterCount", "70B"), want: 170},
		"parameterCount over name":    {xr: with("model.modelURL", "meta-llama/Llama-3.1-8B-Instruct", "model.parameterCount", "70b"), want: 170},
		"parameterCount, FP8 in name": {xr: with("model.modelURL", "org/m-FP8", "model.parameterCount", "70B"), want: 100},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), names.EngineKey("m")).StartupProbe
			if p.FailureThreshold != tc.want {
				t.Errorf("startup failureThreshold = %d, want %d", p.FailureThreshold, tc.want)
			}
		})
	}
}

// TestProgressDeadline: the engine Deployment's progress deadline exceeds
// the startup probe's whole budget by Kubernetes' default, 600 s, so a model
// still downloading is not a failed rollout.
func TestProgressDeadline(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want int32
	}{
		"Unknown size: 600 s budget":   {xr: minimalXR(), want: 1200},
		"70B: 1700 s budget":           {xr: with("model.modelURL", "meta-llama/Llama-3.1-70B-Instruct"), want: 2300},
		"405B: the 2 h cap":            {xr: with("model.modelURL", "meta-llama/Llama-3.1-405B-Instruct"), want: 7800},
		"Overrides, initial delay too": {xr: with("probes.startup", map[string]any{"initialDelaySeconds": 60, "periodSeconds": 30, "failureThreshold": 100}), want: 3660},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, nil, nil)), names.EngineKey("m"), &appsv1.Deployment{})
			if got := d.Spec.ProgressDeadlineSeconds; got == nil || *got != tc.want {
				t.Errorf("progressDeadlineSeconds = %v, want %d", got, tc.want)
			}
		})
	}
}
