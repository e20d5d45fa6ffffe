package helm2stack

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDisaggregatedRecipe converts the chart's P/D recipe (tutorial 16, as
// the disagg-prefill scenario holds it) by its engines' image: on the
// tutorial's image, whose LMCache reads the recipe's names, it stays the
// recipe (transfer lmcache); on any other, it becomes transfer nixl, and
// says why. A value of the recipe the stack does not render is said.
func TestDisaggregatedRecipe(t *testing.T) {
	values, err := os.ReadFile("../cmd/helm2stack/testdata/scenarios/disagg-prefill.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const converted = "servingEngineSpec.modelSpec[0].lmcacheConfig.enablePD"
	for name, tc := range map[string]struct {
		edit         func(string) string
		transfer     string
		notes        map[string]string // key: the start of its note
		routingLogic string
	}{
		"TutorialImage": {edit: func(s string) string { return s }, transfer: "lmcache",
			notes:        map[string]string{converted: "converted: servingEngineSpec.modelSpec[0] and servingEngineSpec.modelSpec[1] become model llama with disaggregation transfer lmcache"},
			routingLogic: "disaggregated_prefill: kept"},
		"OtherPort": {edit: func(s string) string { return strings.Replace(s, `nixlPeerPort: "55555"`, `nixlPeerPort: "7300"`, 1) }, transfer: "lmcache",
			notes:        map[string]string{"servingEngineSpec.modelSpec[0].lmcacheConfig.nixlPeerPort": "7300: the stack renders 55555"},
			routingLogic: "disaggregated_prefill: kept"},
		"LaterImage": {edit: func(s string) string { return strings.ReplaceAll(s, "tag: 2025-05-27-v1", "tag: 2025-10-01") }, transfer: "",
			notes:        map[string]string{converted: "converted: servingEngineSpec.modelSpec[0] and servingEngineSpec.modelSpec[1] become model llama with disaggregation (groups llama-prefill and llama-decode), whose decode engines pull the KV cache from the prefill pods with vLLM's NixlConnector instead of LMCache's NIXL backend, behind the router's disaggregated_prefill_orchestrated logic: the image lmcache/vllm-openai:2025-10-01 is not an lmcache/vllm-openai image built from 2025-05-27 to 2025-09-11"},
			routingLogic: "disaggregated_prefill_orchestrated:"},
		"VLLMImage": {edit: func(s string) string {
			return strings.ReplaceAll(strings.ReplaceAll(s, "tag: 2025-05-27-v1", "tag: v0.12.0"), "repository: lmcache/vllm-openai", "repository: vllm/vllm-openai")
		}, transfer: "", notes: map[string]string{"servingEngineSpec.modelSpec[0].tag": "disaggregation needs vLLM 0.10.2 or later"},
			routingLogic: "disaggregated_prefill_orchestrated:"},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Convert([]byte(tc.edit(string(values))), Options{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			d := res.Stack.Spec.Disaggregation
			if d == nil || d.Transfer != tc.transfer {
				t.Fatalf("disaggregation %+v, want transfer %q", d, tc.transfer)
			}
			notes := map[string][]string{}
			for _, n := range res.Notes {
				notes[n.Key] = append(notes[n.Key], n.Message)
			}
			tc.notes["routerSpec.routingLogic"] = tc.routingLogic
			for key, start := range tc.notes {
				if !slicesHasPrefix(notes[key], start) {
					t.Errorf("notes of %s: %q, want one starting %q", key, notes[key], start)
				}
			}
			if len(res.Dropped) > 0 {
				t.Errorf("dropped: %v", res.Dropped)
			}
		})
	}
}

func slicesHasPrefix(messages []string, prefix string) bool {
	for _, m := range messages {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// TestDisaggregatedRecipeAdapters: an adapter whose baseModel names one of
// the recipe's two models goes to the model they became, and says so.
func TestDisaggregatedRecipeAdapters(t *testing.T) {
	values, err := os.ReadFile("../cmd/helm2stack/testdata/scenarios/disagg-prefill.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.ReplaceAll(string(values), "      modelURL: meta-llama/Llama-3.1-8B-Instruct\n", "      modelURL: meta-llama/Llama-3.1-8B-Instruct\n      enableLoRA: true\n") + `
loraAdapters:
  - name: sql-adapter
    baseModel: llama-decode
    adapterSource: {type: local, adapterName: sql-lora, adapterPath: /data/lora-adapters/sql-lora}
`
	res, err := Convert([]byte(v), Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) > 0 {
		t.Errorf("dropped: %v", res.Dropped)
	}
	m := res.Stack.Spec.Model
	if m == nil || m.Name != "llama" || len(m.LoRAAdapters) != 1 || m.LoRAAdapters[0].Name != "sql-lora" {
		t.Fatalf("model %+v, want llama with adapter sql-lora", m)
	}
	want := "loraAdapters[0]: baseModel llama-decode is now model llama, disaggregated: both groups load the adapter"
	if !slicesHasPrefix(findingStrings(res.Notes), want) {
		t.Errorf("notes %q lack %q", res.Notes, want)
	}
}

func findingStrings(fs []Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// TestDisaggregatedRecipeCICopy converts the chart's CI copy of the recipe
// (tests/assets/values-10-disagg-prefill.yaml, at production-stack HEAD
// only): on the tutorial's image it stays the recipe.
func TestDisaggregatedRecipeCICopy(t *testing.T) {
	out, err := exec.Command("git", "--git-dir="+chartMirror, "show", "HEAD:tests/assets/values-10-disagg-prefill.yaml").Output()
	if err != nil {
		t.Skipf("the chart's CI values are not available from %s: %v", chartMirror, err)
	}
	res, err := Convert(out, Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Stack.Spec.Disaggregation
	if m := res.Stack.Spec.Model; m == nil || m.Name != "opt125m" || d == nil || d.Transfer != "lmcache" {
		t.Errorf("model %+v, disaggregation %+v: want model opt125m with transfer lmcache", m, d)
	}
}
