package kubecheck

import (
	"slices"
	"testing"
)

// TestKEDAWebhookProblems: the oracle refuses what KEDA v2.20.2's webhook
// refuses: no trigger, two triggers of one name, a fallback with only cpu
// or memory triggers; several named triggers and a fallback on a
// prometheus trigger pass.
func TestKEDAWebhookProblems(t *testing.T) {
	prom := func(name string) any { return map[string]any{"type": "prometheus", "name": name} }
	fallback := map[string]any{"failureThreshold": int64(3), "replicas": int64(2)}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"no trigger", map[string]any{}, []string{"no triggers"}},
		{"one name twice", map[string]any{"triggers": []any{prom("a"), prom("b"), prom("a")}}, []string{`spec.triggers: triggerName "a" is defined multiple times`}},
		{"fallback on cpu", map[string]any{"triggers": []any{map[string]any{"type": "cpu"}}, "fallback": fallback},
			[]string{"spec.fallback: at least one trigger (that is not cpu or memory) has to have the AverageValue type for the fallback to be enabled"}},
		{"named triggers, fallback", map[string]any{"triggers": []any{prom("a"), prom("b"), prom("")}, "fallback": fallback}, nil},
	} {
		if got := kedaWebhookProblems(tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
