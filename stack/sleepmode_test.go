package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestSleepModeCommand: with --enable-sleep-mode in extraArgs the whole
// argv of vllm serve is the engine container's command, where the router
// reads it (router-sleep-detection.tsv), the user's items verbatim and in
// order; without it, command vllm serve and the arguments in args.
func TestSleepModeCommand(t *testing.T) {
	extra := []any{"--enable-sleep-mode", "--max-num-seqs=8", "--swap-space", "4"}
	rsp := reconciled(t, with("vllmConfig.extraArgs", extra), nil)
	if rsp.refusal != "" {
		t.Fatalf("refused: %s", rsp.refusal)
	}
	sleeping := desired(t, rsp, "engine-m", &appsv1.Deployment{})
	plain := desired(t, reconciled(t, with("vllmConfig.extraArgs", extra[1:]), nil), "engine-m", &appsv1.Deployment{})
	c, p := sleeping.Spec.Template.Spec.Containers[0], plain.Spec.Template.Spec.Containers[0]
	if c.Args != nil {
		t.Errorf("args %q, want none: the router reads only the command", c.Args)
	}
	if !slices.Equal(p.Command, []string{"vllm", "serve"}) {
		t.Errorf("without sleep mode the command is %q, want vllm serve", p.Command)
	}
	// The same argv as without sleep mode, with the flag where the user
	// put it among the extraArgs.
	want := append(append(slices.Clone(p.Command), p.Args[:len(p.Args)-3]...), "--enable-sleep-mode", "--max-num-seqs=8", "--swap-space", "4")
	if diff := cmp.Diff(want, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
}

// TestRouterRBACByRelease: the router's Role is what its release calls in
// its discovery mode (router-k8s-calls.tsv): pods watch, from 0.1.6 get,
// and patch only with an engine that can sleep; with service-name, services
// get and watch (patch only with sleep), endpoints get, pods list.
func TestRouterRBACByRelease(t *testing.T) {
	pods := func(verbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}}
	}
	serviceName := func(serviceVerbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: serviceVerbs},
			{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{"get"}},
		}
	}
	sleep := []any{"--enable-sleep-mode"}
	for name, tc := range map[string]struct {
		xr          map[string]any
		want        []rbacv1.PolicyRule
		wantWarning string
	}{
		"PodIP":              {xr: minimalXR(), want: pods("get", "watch")},
		"PodIPSleep":         {xr: with("vllmConfig.extraArgs", sleep), want: pods("get", "watch", "patch")},
		"PodIP015":           {xr: with("routerConfig.image", "lmcache/lmstack-router:v0.1.5"), want: pods("watch")},
		"PodIP015Sleep":      {xr: with("routerConfig.image", "lmcache/lmstack-router:v0.1.5", "vllmConfig.extraArgs", sleep), want: pods("watch"), wantWarning: "spec.vllmConfig.extraArgs --enable-sleep-mode: router 0.1.5 (routerConfig.image lmcache/lmstack-router:v0.1.5) does not read sleep mode from the engine's pod"},
		"PodIP016Sleep":      {xr: with("routerConfig.image", "lmcache/lmstack-router:v0.1.6", "vllmConfig.extraArgs", sleep), want: pods("get", "watch", "patch")},
		"ServiceName":        {xr: with("routerConfig.k8sServiceDiscoveryType", "service-name"), want: serviceName("get", "watch")},
		"ServiceNameSleep":   {xr: with("routerConfig.k8sServiceDiscoveryType", "service-name", "vllmConfig.extraArgs", sleep), want: serviceName("get", "watch", "patch")},
		"SleepFlagWithValue": {xr: with("vllmConfig.extraArgs", []any{"--enable-sleep-mode=true"}), want: pods("get", "watch")},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := reconciled(t, tc.xr, nil)
			if rsp.refusal != "" {
				t.Fatalf("refused: %s", rsp.refusal)
			}
			role := desired(t, rsp, "router-role", &rbacv1.Role{})
			if diff := cmp.Diff(tc.want, role.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			warned := slices.ContainsFunc(rsp.warnings, func(w string) bool { return tc.wantWarning != "" && strings.Contains(w, tc.wantWarning) })
			if tc.wantWarning != "" && !warned {
				t.Errorf("no warning %q in %q", tc.wantWarning, rsp.warnings)
			}
		})
	}
}
