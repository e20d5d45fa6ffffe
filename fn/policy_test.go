package fn

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"sigs.k8s.io/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	syncer "github.com/vllm-project/function-vllm-stack/internal/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
)

// adaptersInput and adaptersXR are a stack with runtime adapters.
var adaptersInput = map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "adapterSync": map[string]any{"image": "ghcr.io/vllm-project/function-vllm-stack:v0.1.0"}}

func adaptersXR() map[string]any {
	return with("model.enableLoRA", true, "model.enableRuntimeAdapters", true,
		"model.adapters", []any{map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "org/sql-lora"}}})
}

// policyFound is Crossplane's answer to a requirement that found the
// policy object of kind.
func policyFound(t *testing.T, kind string) *fnv1.Resources {
	return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: toStruct(t, map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": "function-vllm-stack-adapter-sync"}})}}}
}

// TestSyncPolicyRequired: a stack with runtime adapters asks for the
// admission policy of composition/clusterrole.yaml and its binding, by name,
// and is refused, naming the fix, once Crossplane looked and one is missing.
func TestSyncPolicyRequired(t *testing.T) {
	xr := onCluster(adaptersXR())
	rsp := mustRun(t, req(t, xr, adaptersInput, nil))
	for name, kind := range map[string]string{"adapter-sync-policy": "ValidatingAdmissionPolicy", "adapter-sync-policy-binding": "ValidatingAdmissionPolicyBinding"} {
		want := &fnv1.ResourceSelector{ApiVersion: "admissionregistration.k8s.io/v1", Kind: kind, Match: &fnv1.ResourceSelector_MatchName{MatchName: "function-vllm-stack-adapter-sync"}}
		if diff := cmp.Diff(want, rsp.GetRequirements().GetResources()[name], protocmp.Transform()); diff != "" {
			t.Errorf("requirement %s (-want +got):\n%s", name, diff)
		}
	}

	const (
		fix  = ", which the cluster does not have: it confines the adapter sync identity to its own pod's annotations, which its Role alone does not; apply composition/clusterrole.yaml (Kubernetes 1.30 or later), or turn enableRuntimeAdapters off"
		head = "cannot compose the stack: enableRuntimeAdapters needs the "
	)
	for name, c := range map[string]struct {
		required map[string]*fnv1.Resources
		want     string
	}{
		"both found":     {map[string]*fnv1.Resources{"adapter-sync-policy": policyFound(t, "ValidatingAdmissionPolicy"), "adapter-sync-policy-binding": policyFound(t, "ValidatingAdmissionPolicyBinding")}, ""},
		"none":           {map[string]*fnv1.Resources{"adapter-sync-policy": nil, "adapter-sync-policy-binding": nil}, head + "ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding function-vllm-stack-adapter-sync" + fix},
		"binding absent": {map[string]*fnv1.Resources{"adapter-sync-policy": policyFound(t, "ValidatingAdmissionPolicy"), "adapter-sync-policy-binding": {}}, head + "ValidatingAdmissionPolicyBinding function-vllm-stack-adapter-sync" + fix},
		// A policy sent where the binding was asked for is not the binding.
		"wrong kind": {map[string]*fnv1.Resources{"adapter-sync-policy": policyFound(t, "ValidatingAdmissionPolicy"), "adapter-sync-policy-binding": policyFound(t, "ValidatingAdmissionPolicy")}, head + "ValidatingAdmissionPolicyBinding function-vllm-stack-adapter-sync" + fix},
	} {
		t.Run(name, func(t *testing.T) {
			r := req(t, xr, adaptersInput, nil)
			r.RequiredResources = c.required
			if c.want == "" {
				mustRun(t, r)
				return
			}
			if got := fatal(t, run(t, r)); got != c.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, c.want)
			}
		})
	}

	// A preview (crossplane render) has no cluster: a warning.
	rsp = mustRun(t, req(t, adaptersXR(), adaptersInput, nil))
	var got []string
	for _, res := range rsp.GetResults() {
		if strings.HasPrefix(res.GetMessage(), "preview: ") {
			got = append(got, res.GetMessage())
		}
	}
	want := []string{"preview: enableRuntimeAdapters is shown as if the cluster had the ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding function-vllm-stack-adapter-sync of composition/clusterrole.yaml; on a cluster without it the stack is refused until it is applied"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("preview warnings (-want +got):\n%s", diff)
	}

	// Without runtime adapters neither is asked for.
	for name := range mustRun(t, req(t, onCluster(minimalXR()), nil, nil)).GetRequirements().GetResources() {
		if strings.HasPrefix(name, "adapter-sync-policy") {
			t.Errorf("a stack without runtime adapters requires %s", name)
		}
	}
}

// TestSyncPolicyShipped: composition/clusterrole.yaml holds the policy and
// binding the function requires, by the names it asks for, selecting the
// ServiceAccounts the stack names and letting through exactly the
// annotations the sync program writes; and lets Crossplane read both.
func TestSyncPolicyShipped(t *testing.T) {
	b, err := os.ReadFile("../composition/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]map[string]any{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		byKind[m["kind"].(string)] = m
	}
	policy, binding := byKind["ValidatingAdmissionPolicy"], byKind["ValidatingAdmissionPolicyBinding"]
	if policy == nil || binding == nil {
		t.Fatalf("composition/clusterrole.yaml has kinds %v, want a ValidatingAdmissionPolicy and its binding", slices.Sorted(maps.Keys(byKind)))
	}
	get := func(m map[string]any, path ...string) any {
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	for what, got := range map[string]any{
		"policy name":                get(policy, "metadata", "name"),
		"binding name":               get(binding, "metadata", "name"),
		"binding policyName":         get(binding, "spec", "policyName"),
		"policy apiVersion":          policy["apiVersion"],
		"binding apiVersion":         binding["apiVersion"],
		"failurePolicy":              get(policy, "spec", "failurePolicy"),
		"binding validationActions":  fmt.Sprint(get(binding, "spec", "validationActions")),
		"policy matchConditions[0]":  strings.Contains(fmt.Sprint(get(policy, "spec", "matchConditions")), "endsWith('"+adaptersync.ServiceAccountSuffix+"')"),
		"policy variables owned":     fmt.Sprint(get(policy, "spec", "variables").([]any)[0]),
		"ClusterRole reads policies": strings.Contains(fmt.Sprint(get(byKind["ClusterRole"], "rules")), "[validatingadmissionpolicies validatingadmissionpolicybindings] verbs:[get list watch]"),
	} {
		want := map[string]any{
			"policy name": adaptersync.PolicyName, "binding name": adaptersync.PolicyName, "binding policyName": adaptersync.PolicyName,
			"policy apiVersion": admissionAPIVersion, "binding apiVersion": admissionAPIVersion,
			"failurePolicy": "Fail", "binding validationActions": "[Deny]", "policy matchConditions[0]": true,
			"policy variables owned":     fmt.Sprintf("map[expression:['%s', '%s'] name:owned]", syncer.AnnotationModified, syncer.AnnotationStatus),
			"ClusterRole reads policies": true,
		}[what]
		if got != want {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
}
