package stack

import "testing"

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
			got, ok := modelBillions(name)
			if ok != tc.ok || got != tc.want {
				t.Errorf("modelBillions(%q) = %v, %v; want %v, %v", name, got, ok, tc.want, tc.ok)
			}
		})
	}
}
