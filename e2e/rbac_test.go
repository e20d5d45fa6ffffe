package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
)

// TestCrossplaneRBAC applies composition/clusterrole.yaml and checks that a
// ServiceAccount bound only to it, as Crossplane's is through aggregation,
// can create, read, update and delete every kind the function composes
// (renderableKinds; the CRD kinds through their upstream CRDs), including the
// router's Role: Kubernetes lets a subject create a Role only if it holds
// every permission the Role grants. The SA authenticates with a
// token from the TokenRequest API, not impersonation. A ServiceAccount bound
// to the same ClusterRole without its pods rule is refused the Role, which
// shows the rule is needed.
func TestCrossplaneRBAC(t *testing.T) {
	ctx := context.Background()
	admin, _ := client(t, cp.Config())

	role := readYAML(t, "../composition/clusterrole.yaml")
	cr := &unstructured.Unstructured{Object: role}
	if _, err := apply(ctx, t, admin, cr, "e2e-admin", false); err != nil {
		t.Fatalf("cannot apply composition/clusterrole.yaml: %v", err)
	}
	if got := cr.GetLabels()["rbac.crossplane.io/aggregate-to-crossplane"]; got != "true" {
		t.Errorf("the ClusterRole is not aggregated to Crossplane's: label rbac.crossplane.io/aggregate-to-crossplane=%q", got)
	}

	sys := namespace(t, "crossplane-system")
	tok := serviceAccountToken(ctx, t, sys, "crossplane", cr.GetName())
	saCfg := cp.ConfigForToken(tok)

	// The token authenticates as the ServiceAccount.
	saAuthn, err := authnv1client.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	saAuthz, err := authzv1client.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	who, err := saAuthn.SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := who.Status.UserInfo.Username, "system:serviceaccount:"+sys+":crossplane"; got != want {
		t.Fatalf("the token authenticates as %q, want %q", got, want)
	}

	// Every kind, with every verb Crossplane uses on composed resources.
	ns := namespace(t, "rbac-stacks")
	kinds := map[string]bool{}
	sa, _ := client(t, saCfg)
	resources := map[schema.GroupResource]bool{}
	// full.yaml composes every optional kind but the PrometheusRule, which
	// observability.yaml composes, InferenceObjectives, which
	// inference-extension.yaml composes, and the fill Job, which
	// model-cache.yaml composes.
	for _, f := range []string{"example/xr.yaml", "example/stacks/session.yaml", "e2e/testdata/service-name-discovery.yaml", "example/stacks/multi-model.yaml", "test/render/testdata/full.yaml", "example/stacks/multi-node.yaml", "example/stacks/inference-extension.yaml", "example/stacks/disaggregated-inference-extension.yaml", "example/stacks/observability.yaml", "example/stacks/model-cache.yaml"} {
		xr := &unstructured.Unstructured{Object: readYAML(t, "../"+f)}
		xr.SetNamespace(ns)
		input := compositionInput(t, "../composition/composition.yaml")
		// Two reconciles, as Crossplane runs them: the second composes what
		// waits for an object of the first to be observed (the router's
		// RoleBinding waits for its Role).
		appliedObjs := map[string]*unstructured.Unstructured{}
		for pass := range 2 {
			var observed map[string]*unstructured.Unstructured
			if pass > 0 {
				observed = appliedObjs
			}
			rsp := render(t, xr.Object, input, observed)
			// Crossplane fetches the resources the function requires (the
			// stack's pods) with its own ServiceAccount.
			for name, sel := range rsp.GetRequirements().GetResources() {
				gv, err := schema.ParseGroupVersion(sel.GetApiVersion())
				if err != nil {
					t.Fatal(err)
				}
				m, err := mapper.RESTMapping(gv.WithKind(sel.GetKind()).GroupKind(), gv.Version)
				if err != nil {
					t.Fatal(err)
				}
				verb, object := "list", ""
				if byName, ok := sel.GetMatch().(*fnv1.ResourceSelector_MatchName); ok {
					verb, object = "get", byName.MatchName
				}
				if !allowed(ctx, t, saAuthz, sel.GetNamespace(), m.Resource.Group, m.Resource.Resource, verb, object) {
					t.Errorf("Crossplane's ServiceAccount may not %s the %s the function requires as %q", verb, m.Resource.Resource, name)
				}
			}
			for _, k := range desiredKeys(rsp) {
				if appliedObjs[k] != nil {
					continue
				}
				o := composed(xr, k, rsp.GetDesired().GetResources()[k])
				gvk := o.GroupVersionKind()
				kinds[strings.TrimPrefix(gvk.GroupVersion().String()+"/"+gvk.Kind, "/")] = true
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("no API resource for %s: %v", gvk, err)
				}
				resources[m.Resource.GroupResource()] = true
				got, err := apply(ctx, t, sa, o, composedFieldOwner(xr), false)
				if err != nil {
					t.Errorf("%s: Crossplane's ServiceAccount cannot apply %s: %v", f, describe(o), err)
					continue
				}
				appliedObjs[k] = got
				ri := resourceFor(t, sa, o)
				if _, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
					t.Errorf("cannot get %s: %v", describe(o), err)
				}
				if _, err := ri.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
					t.Errorf("cannot list %ss: %v", o.GetKind(), err)
				}
				w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + o.GetName()})
				if err != nil {
					t.Errorf("cannot watch %ss: %v", o.GetKind(), err)
				} else {
					w.Stop()
				}
			}
		}
	}
	for _, want := range renderableKinds {
		if !kinds[want] {
			t.Errorf("the stacks composed no %s; the test covers %v", want, kinds)
		}
	}
	// Crossplane updates composed resources and deletes them with their XR.
	for gr := range resources {
		for _, verb := range []string{"update", "patch", "delete"} {
			if !allowed(ctx, t, saAuthz, ns, gr.Group, gr.Resource, verb, "") {
				t.Errorf("Crossplane's ServiceAccount may not %s %s", verb, gr)
			}
		}
	}
	if t.Failed() {
		return
	}
	// And it can delete what it created.
	list, err := sa.Resource(rbacv1.SchemeGroupVersion.WithResource("roles")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Items {
		if err := sa.Resource(rbacv1.SchemeGroupVersion.WithResource("roles")).Namespace(ns).Delete(ctx, r.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("cannot delete Role %s: %v", r.GetName(), err)
		}
	}

	// Without the pods rule the router's Role is refused (RBAC escalation
	// prevention), so the rule in composition/clusterrole.yaml is needed.
	lessRole := cr.DeepCopy()
	lessRole.SetName("e2e:without-pods")
	lessRole.SetLabels(nil)
	rules, _, _ := unstructured.NestedSlice(lessRole.Object, "rules")
	rules = slices.DeleteFunc(rules, func(r any) bool {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		return slices.Contains(res, "pods")
	})
	if err := unstructured.SetNestedSlice(lessRole.Object, rules, "rules"); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(ctx, t, admin, lessRole, "e2e-admin", false); err != nil {
		t.Fatal(err)
	}
	lessSA, _ := client(t, cp.ConfigForToken(serviceAccountToken(ctx, t, sys, "without-pods", lessRole.GetName())))
	xr := &unstructured.Unstructured{Object: readYAML(t, "../example/xr.yaml")}
	xr.SetNamespace(namespace(t, "rbac-without-pods"))
	rsp := render(t, xr.Object, compositionInput(t, "../composition/composition.yaml"), nil)
	o := composed(xr, "router-role", rsp.GetDesired().GetResources()["router-role"])
	_, err = apply(ctx, t, lessSA, o, composedFieldOwner(xr), false)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
		t.Errorf("creating the router's Role without holding pods permissions: got %v, want Forbidden for escalation", err)
	}
}

// serviceAccountToken creates a ServiceAccount bound only to clusterRole and
// returns a token for it from the TokenRequest API.
func serviceAccountToken(ctx context.Context, t *testing.T, ns, name, clusterRole string) string {
	t.Helper()
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e:" + ns + ":" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// allowed asks whether the caller may verb the resource; name "" is any
// object of it.
func allowed(ctx context.Context, t *testing.T, k authzv1client.AuthorizationV1Interface, ns, group, resource, verb, name string) bool {
	t.Helper()
	r, err := k.SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: ns, Group: group, Resource: resource, Verb: verb, Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}
