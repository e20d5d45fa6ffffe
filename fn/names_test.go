package fn

import (
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestLongNames: a stack and model whose names exceed Kubernetes limits still
// render valid names and labels.
func TestLongNames(t *testing.T) {
	xr := with("model.name", "Meta-Llama-3.1-405B-Instruct-FP8-dynamic-with-a-very-long-fine-tune-suffix-v2")
	setPath(xr, "metadata.name", "a-platform-teams-production-stack-with-a-long-descriptive-name")
	rsp := mustRun(t, req(t, xr, nil, nil))
	id := "meta-llama-3-1-405b-instruct-fp8-dynamic-with-a-very-long-fine-tune-suffix-v2" // its DNS label
	svc := desired(t, rsp, "engine-"+id+"-service", &corev1.Service{})
	if msgs := validation.IsDNS1035Label(svc.Name); len(msgs) > 0 {
		t.Errorf("engine Service name %q: %v", svc.Name, msgs)
	}
	router := desired(t, rsp, "router-service", &corev1.Service{})
	if msgs := validation.IsDNS1035Label(router.Name); len(msgs) > 0 {
		t.Errorf("router Service name %q: %v", router.Name, msgs)
	}
	d := desired(t, rsp, "engine-"+id, &appsv1.Deployment{})
	for k, v := range d.Spec.Template.Labels {
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, msgs)
		}
	}
	if got := d.Spec.Template.Labels["model"]; got != "meta-llama-3-1-405b-instruct-fp8-dynamic-with-a-very-l-690b3563" {
		t.Errorf("model label %q: a name that is not a valid label value becomes its DNS form, shortened", got)
	}
}

func TestModelLabelKeepsUsersValue(t *testing.T) {
	d := desired(t, mustRun(t, req(t, with("model.name", "Llama-3.2-1B-Instruct"), nil, nil)), "engine-llama-3-2-1b-instruct", &appsv1.Deployment{})
	if got := d.Spec.Template.Labels["model"]; got != "Llama-3.2-1B-Instruct" {
		t.Errorf("model label = %q, want the user's model name: the router and LoRA controller read it", got)
	}
	want := map[string]string{
		"app.kubernetes.io/name":       "llama-3-2-1b-instruct",
		"app.kubernetes.io/instance":   "s",
		"app.kubernetes.io/component":  "serving-engine",
		"app.kubernetes.io/part-of":    "vllm-stack",
		"app.kubernetes.io/managed-by": "crossplane",
		"model":                        "Llama-3.2-1B-Instruct",
	}
	for k, v := range want {
		if d.Labels[k] != v || d.Spec.Template.Labels[k] != v {
			t.Errorf("label %s: object %q, pod %q, want %q", k, d.Labels[k], d.Spec.Template.Labels[k], v)
		}
	}
	if _, ok := d.Spec.Selector.MatchLabels["model"]; ok {
		t.Error("the selector must not use the model label")
	}
}

// TestObjectNames: names follow the Helm chart so Service DNS names survive a
// move from Helm; composition resource names are stable.
func TestObjectNames(t *testing.T) {
	rsp := reconciled(t, with("model.chatTemplate", "t"), nil)
	want := map[string]string{
		"engine-m":               "s-m-deployment-vllm",
		"engine-m-service":       "s-m-engine-service",
		"engine-m-storage":       "s-m-storage-claim",
		"engine-m-chat-template": "s-m-chat-templates",
		"router":                 "s-deployment-router",
		"router-service":         "s-router-service",
		"router-serviceaccount":  "s-router-service-account",
		"router-role":            "s-reader",
		"router-rolebinding":     "s-deployment-access-binding",
	}
	got := map[string]string{}
	for k, r := range rsp.GetDesired().GetResources() {
		m := r.GetResource().GetFields()["metadata"].GetStructValue().GetFields()
		got[k] = m["name"].GetStringValue()
		if ns := m["namespace"].GetStringValue(); ns != "llm" {
			t.Errorf("%s: namespace %q, want llm", k, ns)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got resources %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: name %q, want %q", k, got[k], v)
		}
	}
	cm := desired(t, rsp, "engine-m-chat-template", &corev1.ConfigMap{})
	if cm.Data["chat-template.jinja"] != "t" {
		t.Errorf("chat template ConfigMap data = %v", cm.Data)
	}
}

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
