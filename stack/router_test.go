package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

func TestRouterArgs(t *testing.T) {
	base := []string{"--host", "0.0.0.0", "--port", "8000", "--service-discovery", "k8s", "--k8s-namespace=llm",
		"--k8s-label-selector=app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine"}
	tail := []string{"--engine-stats-interval", "15", "--request-stats-window", "60"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"DefaultRoundRobin":        {xr: minimalXR(), want: join(base, []string{"--routing-logic=roundrobin"}, tail)},
		"SessionDefaultKey":        {xr: with("routerConfig.routerType", "session"), want: join(base, []string{"--routing-logic=session", "--session-key=x-user-id"}, tail)},
		"SessionKey":               {xr: with("routerConfig.routerType", "session", "routerConfig.sessionKey", "x-session-id"), want: join(base, []string{"--routing-logic=session", "--session-key=x-session-id"}, tail)},
		"KeyIgnoredWithoutSession": {xr: with("routerConfig.sessionKey", "x-session-id"), want: join(base, []string{"--routing-logic=roundrobin"}, tail)},
		"PrefixAware":              {xr: with("routerConfig.routerType", "prefixaware"), want: join(base, []string{"--routing-logic=prefixaware"}, tail)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, nil, nil)), "router", &appsv1.Deployment{})
			if diff := cmp.Diff(tc.want, d.Spec.Template.Spec.Containers[0].Args); diff != "" {
				t.Errorf("router args (-want +got):\n%s", diff)
			}
		})
	}
}

// chartRouterResources are the router's resources in the Helm chart's
// values.yaml, which the function takes as its default.
func chartRouterResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m"), corev1.ResourceMemory: resource.MustParse("1000Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1000Mi")},
	}
}

func TestRouterDeployment(t *testing.T) {
	cases := map[string]struct {
		xr            map[string]any
		input         map[string]any
		wantImage     string
		wantReplicas  int32
		wantResources corev1.ResourceRequirements
	}{
		"Defaults":     {xr: minimalXR(), wantImage: "lmcache/lmstack-router:latest", wantReplicas: 1, wantResources: chartRouterResources()},
		"InputPinsTag": {xr: minimalXR(), input: stacktest.CompositionInput(), wantImage: "lmcache/lmstack-router:v0.1.12", wantReplicas: 1, wantResources: chartRouterResources()},
		"StackOverridesImage": {xr: with("routerConfig.image", "registry.local/router:dev", "routerConfig.replicas", 2), input: stacktest.CompositionInput(),
			wantImage: "registry.local/router:dev", wantReplicas: 2, wantResources: chartRouterResources()},
		"Resources": {xr: with("routerConfig.resources", map[string]any{"requests": map[string]any{"cpu": "1"}, "limits": map[string]any{"memory": "2Gi"}}),
			wantImage: "lmcache/lmstack-router:latest", wantReplicas: 1, wantResources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			}},
		"ZeroReplicas": {xr: with("routerConfig.replicas", 0), wantImage: "lmcache/lmstack-router:latest", wantReplicas: 0, wantResources: chartRouterResources()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, tc.input, nil)), "router", &appsv1.Deployment{})
			pod := d.Spec.Template.Spec
			c := pod.Containers[0]
			if c.Image != tc.wantImage {
				t.Errorf("image = %q, want %q", c.Image, tc.wantImage)
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.wantReplicas {
				t.Errorf("replicas = %v, want %d", d.Spec.Replicas, tc.wantReplicas)
			}
			if diff := cmp.Diff(tc.wantResources, c.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if len(c.Command) != 0 {
				t.Errorf("command = %q, want none: the image's entrypoint is vllm-router", c.Command)
			}
			if pod.ServiceAccountName != "s-router-service-account" {
				t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
			}
			if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
				t.Errorf("router pod must run as non-root: %+v", pod.SecurityContext)
			}
			if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
				t.Errorf("router container must not allow privilege escalation: %+v", c.SecurityContext)
			}
			if c.ReadinessProbe.HTTPGet.Path != "/health" || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8000 ||
				c.LivenessProbe.HTTPGet.Path != "/health" || c.LivenessProbe.HTTPGet.Port.IntValue() != 8000 {
				t.Errorf("router probes must GET /health on 8000: %+v %+v", c.ReadinessProbe, c.LivenessProbe)
			}
		})
	}
}

// TestRouterRBAC: the router may watch and read the pods of its own
// namespace, through its own ServiceAccount, and nothing more: it labels
// pods only of engines that can sleep (TestRouterRBACByRelease).
func TestRouterRBAC(t *testing.T) {
	rsp := reconciled(t, minimalXR(), nil)
	sa := desired(t, rsp, "router-serviceaccount", &corev1.ServiceAccount{})
	role := desired(t, rsp, "router-role", &rbacv1.Role{})
	rb := desired(t, rsp, "router-rolebinding", &rbacv1.RoleBinding{})
	if sa.Name != "s-router-service-account" || sa.Namespace != "llm" {
		t.Errorf("ServiceAccount %s/%s", sa.Namespace, sa.Name)
	}
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "watch"}}}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" || role.Name != "s-reader" {
		t.Errorf("Role %s rules (-want +got):\n%s", role.Name, diff)
	}
	wantRB := rbacv1.RoleBinding{
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "s-router-service-account", Namespace: "llm"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "s-reader"},
	}
	if diff := cmp.Diff(wantRB.Subjects, rb.Subjects); diff != "" {
		t.Errorf("RoleBinding subjects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRB.RoleRef, rb.RoleRef); diff != "" || rb.Name != "s-deployment-access-binding" {
		t.Errorf("RoleBinding %s roleRef (-want +got):\n%s", rb.Name, diff)
	}
}

// TestRouterSelectsOnlyItsStack: the router's discovery selector matches the
// labels of this stack's engine pods and no other stack's.
func TestRouterSelectsOnlyItsStack(t *testing.T) {
	a := mustRun(t, req(t, minimalXR(), nil, nil))
	other := minimalXR()
	stacktest.SetPath(other, "metadata.name", "other")
	b := mustRun(t, req(t, other, nil, nil))
	engineA := desired(t, a, "engine-m", &appsv1.Deployment{}).Spec.Template.Labels
	engineB := desired(t, b, "engine-m", &appsv1.Deployment{}).Spec.Template.Labels
	sel, _ := stacktest.ArgValue(desired(t, a, "router", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Args, "--k8s-label-selector")
	matches := func(l map[string]string) bool {
		return l["app.kubernetes.io/instance"] == "s" && l["app.kubernetes.io/component"] == "serving-engine"
	}
	if sel != "app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine" || !matches(engineA) || matches(engineB) {
		t.Errorf("selector %q must select stack s's engines %v and not stack other's %v", sel, engineA, engineB)
	}
}

func TestServices(t *testing.T) {
	rsp := mustRun(t, req(t, minimalXR(), nil, nil))
	for key, want := range map[string]corev1.ServiceSpec{
		"engine-m-service": {Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{
			"app.kubernetes.io/name": "m", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine"},
			Ports: []corev1.ServicePort{{Name: "service-port", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(8000)}}},
		"router-service": {Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{
			"app.kubernetes.io/name": "router", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "router"},
			Ports: []corev1.ServicePort{{Name: "router-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(8000)}}},
	} {
		got := desired(t, rsp, key, &corev1.Service{})
		if diff := cmp.Diff(want, got.Spec); diff != "" {
			t.Errorf("%s spec (-want +got):\n%s", key, diff)
		}
	}
}

func intOrStr(n int32) intstr.IntOrString { return intstr.FromInt32(n) }

// TestRouterPod: the router's own scheduling, pod annotations, image pull
// settings and node port.
func TestRouterPod(t *testing.T) {
	xr := with(
		"routerConfig.scheduling", map[string]any{
			"nodeSelector":      map[string]any{"pool": "cpu"},
			"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "router", "effect": "NoSchedule"}},
			"priorityClassName": "serving-critical",
		},
		"routerConfig.podAnnotations", map[string]any{"prometheus.io/scrape": "true"},
		"routerConfig.imagePullPolicy", "IfNotPresent",
		"routerConfig.imagePullSecretName", "registry-creds",
		"routerConfig.service", map[string]any{"type": "NodePort", "nodePort": 30080},
	)
	rsp := mustRun(t, req(t, xr, nil, nil))
	d := desired(t, rsp, names.RouterKey, &appsv1.Deployment{})
	pod := d.Spec.Template.Spec
	want := corev1.PodSpec{
		NodeSelector:      map[string]string{"pool": "cpu"},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "router", Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "serving-critical",
		ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry-creds"}},
	}
	got := corev1.PodSpec{NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, PriorityClassName: pod.PriorityClassName, ImagePullSecrets: pod.ImagePullSecrets}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("router pod (-want +got):\n%s", diff)
	}
	if got := d.Spec.Template.Annotations; !cmp.Equal(got, map[string]string{"prometheus.io/scrape": "true"}) {
		t.Errorf("router pod annotations = %v", got)
	}
	if got := pod.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("router imagePullPolicy = %q, want IfNotPresent", got)
	}
	svc := desired(t, rsp, names.RouterServiceKey, &corev1.Service{})
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != 30080 {
		t.Errorf("router Service type %s, nodePort %d; want NodePort 30080", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
	}
}

// TestRoleBindingAfterRole: the API server refuses a RoleBinding to a Role
// it cannot find from a creator that may not bind any Role (Crossplane), and
// Crossplane applies composed objects in no set order: the binding is
// composed once a reconcile observes the Role.
func TestRoleBindingAfterRole(t *testing.T) {
	first := mustRun(t, req(t, minimalXR(), nil, nil))
	if _, ok := first.objects[names.RouterRoleBindingKey]; ok {
		t.Errorf("the RoleBinding is composed before its Role was observed")
	}
	if _, ok := first.objects[names.RouterRoleKey]; !ok {
		t.Fatalf("the Role is not composed")
	}
	rb := desired(t, reconciled(t, minimalXR(), nil), names.RouterRoleBindingKey, &rbacv1.RoleBinding{})
	want := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "s-reader"}
	if rb.RoleRef != want || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "s-router-service-account" {
		t.Errorf("RoleBinding %s: roleRef %v, subjects %v", rb.Name, rb.RoleRef, rb.Subjects)
	}
}
