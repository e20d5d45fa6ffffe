package helm2stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServedNameLifted: --served-model-name in a model's extraArgs (the
// chart's tutorial 23 passes two names) becomes model.servedModelName, the
// rest of extraArgs kept in order; aliases are said, not kept.
func TestServedNameLifted(t *testing.T) {
	const key = "servingEngineSpec.modelSpec[0].vllmConfig.extraArgs"
	cases := map[string]struct {
		args      string
		served    string
		extraArgs []string
		note      string
	}{
		"two names, as tutorial 23": {
			args: `["--served-model-name", "Qwen/Qwen3-8B", "qwen3", "--max-num-seqs", "8"]`, served: "Qwen/Qwen3-8B",
			extraArgs: []string{"--max-num-seqs", "8"},
			note:      "--served-model-name Qwen/Qwen3-8B qwen3: model.servedModelName Qwen/Qwen3-8B; the aliases qwen3 are left out (a stack serves one name per model: clients must send Qwen/Qwen3-8B)",
		},
		"inline, underscores": {
			args: `["--enforce-eager", "--served_model_name=opt"]`, served: "opt",
			extraArgs: []string{"--enforce-eager"},
			note:      "--served-model-name opt: model.servedModelName opt",
		},
		"the last occurrence wins, as in argparse": {
			args: `["--served-model-name", "a", "--served-model-name", "b"]`, served: "b",
			note: "--served-model-name b: model.servedModelName b",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Convert([]byte(modelHead+"      vllmConfig: {extraArgs: "+tc.args+"}\n"), Options{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Stack.Spec.Model
			var extra []string
			if vc := res.Stack.Spec.EngineConfig.VLLMConfig; vc != nil {
				extra = vc.ExtraArgs
			}
			if m == nil || m.ServedModelName != tc.served || !cmp.Equal(tc.extraArgs, extra) {
				t.Errorf("servedModelName %q, extraArgs %q; want %q, %q", m.ServedModelName, extra, tc.served, tc.extraArgs)
			}
			var notes []string
			for _, f := range res.Notes {
				if f.Key == key {
					notes = append(notes, f.Message)
				}
			}
			if want := []string(nil); tc.note != "" {
				want = []string{tc.note}
				if diff := cmp.Diff(want, notes); diff != "" {
					t.Errorf("notes (-want +got):\n%s", diff)
				}
			} else if len(notes) > 0 {
				t.Errorf("notes %q, want none", notes)
			}
		})
	}
}

// TestServedNameWithoutName: an option with no name is kept, and the
// function's refusal names it.
func TestServedNameWithoutName(t *testing.T) {
	_, err := Convert([]byte(modelHead+"      vllmConfig: {extraArgs: [\"--enforce-eager\", \"--served-model-name\"]}\n"), Options{Name: "s"})
	const want = `the function would refuse the converted stack: invalid ProductionStack: spec.vllmConfig.extraArgs[1] "--served-model-name" is refused: spec.model.servedModelName sets --served-model-name (else the stack serves the model as facebook/opt-125m, the name the router, the status and the autoscaler use); set it there, not in extraArgs`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got: %v\nwant: %s", err, want)
	}
}
