package fn

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestLegacyClaim: a v1 XR created by a claim puts every object in the
// claim's namespace and names them after the claim.
func TestLegacyClaim(t *testing.T) {
	xr := stacktest.LoadXR(t, "../example/stacks/legacy-xr.yaml", "")
	rsp := mustRun(t, req(t, xr, nil, nil))
	d := desired(t, rsp, "engine-llama-3-2-1b-instruct", &appsv1.Deployment{})
	if d.Namespace != "team-a" || d.Name != "test-stack-llama-3-2-1b-instruct-deployment-vllm" {
		t.Errorf("engine Deployment %s/%s, want team-a/test-stack-llama-3-2-1b-instruct-deployment-vllm", d.Namespace, d.Name)
	}
	r := desired(t, rsp, "router", &appsv1.Deployment{})
	if ns, _ := stacktest.ArgValue(r.Spec.Template.Spec.Containers[0].Args, "--k8s-namespace"); r.Namespace != "team-a" || ns != "team-a" {
		t.Errorf("router must run and discover engines in team-a: %s %v", r.Namespace, r.Spec.Template.Spec.Containers[0].Args)
	}

	delete(xr["metadata"].(map[string]any), "labels")
	got := fatal(t, run(t, req(t, xr, nil, nil)))
	want := `XProductionStack "test-stack-7xk2p" is cluster scoped and was not created by a claim, so its engines have no namespace: create a ProductionStack claim in the namespace that should run the stack (or install the namespaced XRD in xrd/definition.yaml)`
	if got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

// TestRenderWithoutNamespace: `crossplane render` of the seed manifest, which
// has no namespace, renders into "default", where kubectl would apply it.
func TestRenderWithoutNamespace(t *testing.T) {
	xr := stacktest.LoadXR(t, "../example/xr.yaml", "")
	d := desired(t, mustRun(t, req(t, xr, nil, nil)), "router", &appsv1.Deployment{})
	if ns, _ := stacktest.ArgValue(d.Spec.Template.Spec.Containers[0].Args, "--k8s-namespace"); d.Namespace != "default" || ns != "default" {
		t.Errorf("router %s/%s discovers engines in %q, want namespace default", d.Namespace, d.Name, ns)
	}
}
