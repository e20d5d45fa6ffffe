package helm2stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShutdownTimeoutLifted: --shutdown-timeout in a model's extraArgs
// becomes shutdown.drainSeconds (the function refuses it in extraArgs), the
// rest kept in order; a value the field cannot take is left for the
// function to refuse.
func TestShutdownTimeoutLifted(t *testing.T) {
	const key = "servingEngineSpec.modelSpec[0].vllmConfig.extraArgs"
	cases := map[string]struct {
		args      string
		drain     int32 // -1: none
		extraArgs []string
		note      string
	}{
		"separate value": {args: `["--shutdown-timeout", "60", "--max-num-seqs", "8"]`, drain: 60, extraArgs: []string{"--max-num-seqs", "8"},
			note: "--shutdown-timeout 60: shutdown.drainSeconds 60 (the stack also gives the pod a preStop sleep and a grace period that cover it)"},
		"inline, underscores, the last wins": {args: `["--shutdown_timeout=10", "--enforce-eager", "--shutdown-timeout=0"]`, drain: 0, extraArgs: []string{"--enforce-eager"},
			note: "--shutdown-timeout 0: shutdown.drainSeconds 0 (the stack also gives the pod a preStop sleep and a grace period that cover it)"},
		"not a number": {args: `["--shutdown-timeout=soon"]`, drain: -1, extraArgs: []string{"--shutdown-timeout=soon"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Convert([]byte(modelHead+"      vllmConfig: {extraArgs: "+tc.args+"}\n"), Options{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e := res.Stack.Spec.EngineConfig
			var extra []string
			if e.VLLMConfig != nil {
				extra = e.VLLMConfig.ExtraArgs
			}
			drain := int32(-1)
			if e.Shutdown != nil && e.Shutdown.DrainSeconds != nil {
				drain = *e.Shutdown.DrainSeconds
			}
			if drain != tc.drain || !cmp.Equal(tc.extraArgs, extra) {
				t.Errorf("drainSeconds %d, extraArgs %q; want %d, %q", drain, extra, tc.drain, tc.extraArgs)
			}
			var notes []string
			for _, f := range res.Notes {
				if f.Key == key {
					notes = append(notes, f.Message)
				}
			}
			var want []string
			if tc.note != "" {
				want = []string{tc.note}
			}
			if diff := cmp.Diff(want, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}
