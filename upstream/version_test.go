package upstream

import "testing"

func TestParseVersion(t *testing.T) {
	cases := map[string]struct {
		want Version
		ok   bool
	}{
		"v0.8.3":            {V(0, 8, 3), true},
		"0.9.2":             {V(0, 9, 2), true},
		"v0.10.1.1":         {V(0, 10, 1, 1), true},
		"v0.9.2-cu128":      {V(0, 9, 2), true},
		"v0.11.1rc1":        {V(0, 11, 0), true}, // a pre-release has what the release before has
		"0.1.13.dev3-gabcd": {V(0, 1, 12), true},
		"v0.3.9post2":       {V(0, 3, 9), true},
		"latest":            {},
		"2025-05-27-v1":     {},
		"0.9":               {},
		"0.9.2.1.1":         {},
		"":                  {},
	}
	for in, tc := range cases {
		got, ok := ParseVersion(in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, %v", in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestImageTag(t *testing.T) {
	cases := map[string][2]string{
		"vllm/vllm-openai:v0.8.3":                         {"vllm/vllm-openai", "v0.8.3"},
		"docker.io/vllm/vllm-openai:latest":               {"vllm/vllm-openai", "latest"},
		"registry:5000/vllm/vllm-openai:v0.9.2":           {"vllm/vllm-openai", "v0.9.2"},
		"vllm/vllm-openai@sha256:abcd":                    {"vllm/vllm-openai", ""},
		"vllm/vllm-openai:v0.9.2@sha256:abcd":             {"vllm/vllm-openai", "v0.9.2"},
		"mirror.local/team/vllm/vllm-openai:0.10.2":       {"team/vllm/vllm-openai", "0.10.2"},
		"ghcr.io/vllm-project/production-stack/router:v1": {"vllm-project/production-stack/router", "v1"},
	}
	for in, want := range cases {
		if repo, tag := ImageTag(in); repo != want[0] || tag != want[1] {
			t.Errorf("ImageTag(%q) = %q, %q; want %q, %q", in, repo, tag, want[0], want[1])
		}
	}
}

// TestPickerObjectiveOf: GAIE's group and header up to llm-d v0.8.0 (GAIE's
// runner), llm-d's own from v0.9.0 with the old header as an alias.
func TestPickerObjectiveOf(t *testing.T) {
	gaie := PickerObjective{APIVersion: "inference.networking.x-k8s.io/v1alpha2", Header: "x-gateway-inference-objective"}
	llmd := PickerObjective{APIVersion: "llm-d.ai/v1alpha2", Header: "x-llm-d-inference-objective", OldHeader: "x-gateway-inference-objective"}
	for r, want := range map[PickerRelease]PickerObjective{
		{PickerGAIE, V(1, 3, 0)}: gaie, {PickerGAIE, V(1, 5, 0)}: gaie,
		{PickerLLMD, V(0, 6, 0)}: gaie, {PickerLLMD, V(0, 8, 0)}: gaie,
		{PickerLLMD, V(0, 9, 0)}: llmd, {PickerLLMD, V(0, 10, 0)}: llmd,
	} {
		if got := PickerObjectiveOf(r); got != want {
			t.Errorf("%s: got %+v, want %+v", r, got, want)
		}
	}
}
