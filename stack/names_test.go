package stack

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{
		"Llama-3.2-1B-Instruct":   "llama-3-2-1b-instruct",
		"meta-llama/Llama-3.1-8B": "meta-llama-llama-3-1-8b",
		"--a__b--":                "a-b",
		"Qwen2.5 7B":              "qwen2-5-7b",
		"!!!":                     "",
		"ünïcode":                 "n-code",
		"already-valid-123":       "already-valid-123",
	} {
		if got := names.DNSLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShorten(t *testing.T) {
	if got := names.Shorten("short", 63); got != "short" {
		t.Errorf("a name within the limit must not change, got %q", got)
	}
	long := strings.Repeat("a", 60) + "-engine-service"
	got := names.Shorten(long, 63)
	if len(got) != 63 {
		t.Errorf("len = %d, want 63: %q", len(got), got)
	}
	if got != names.Shorten(long, 63) {
		t.Error("shorten must be deterministic")
	}
	other := names.Shorten(strings.Repeat("a", 60)+"-engine-servicf", 63)
	if got == other {
		t.Errorf("two long names with a shared prefix must differ: %q", got)
	}
	if msgs := validation.IsDNS1035Label(got); len(msgs) > 0 {
		t.Errorf("shortened name %q is not a DNS label: %v", got, msgs)
	}
	if got != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-"+got[55:] || len(got[55:]) != 8 {
		t.Errorf("want a 54-character prefix, '-' and an 8-character hash, got %q", got)
	}
}

// TestLongNames: a stack and model whose names exceed Kubernetes limits still
// render valid names and labels.
func TestLongNames(t *testing.T) {
	xr := with("model.name", "Meta-Llama-3.1-405B-Instruct-FP8-dynamic-with-a-very-long-fine-tune-suffix-v2")
	stacktest.SetPath(xr, "metadata.name", "a-platform-teams-production-stack-with-a-long-descriptive-name")
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
	for k, o := range rsp.objects {
		m := o.(metav1.Object)
		got[k] = m.GetName()
		if ns := m.GetNamespace(); ns != "llm" {
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
