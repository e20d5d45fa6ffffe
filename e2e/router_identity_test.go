package e2e

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
)

// TestRouterIdentity creates the router's rendered ServiceAccount, Role and
// RoleBinding in the API server and asks it, with a token of that
// ServiceAccount, which verbs on pods, Services and Endpoints the router may
// use: exactly those router 0.1.12 calls in the stack's discovery mode
// (stack/testdata/upstream/router-k8s-calls.tsv), patch only with an engine
// that can sleep.
func TestRouterIdentity(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		stack     string
		extraArgs []any
		want      []string
	}{
		"pod-ip":       {stack: "../example/xr.yaml", want: []string{"pods get", "pods watch"}},
		"pod-ip-sleep": {stack: "../example/xr.yaml", extraArgs: []any{"--enable-sleep-mode"}, want: []string{"pods get", "pods patch", "pods watch"}},
		"service-name": {stack: "testdata/service-name-discovery.yaml", want: []string{"endpoints get", "pods list", "services get", "services watch"}},
	} {
		t.Run(name, func(t *testing.T) {
			ns := namespace(t, "router-identity-"+name)
			xr := &unstructured.Unstructured{Object: readYAML(t, tc.stack)}
			xr.SetNamespace(ns)
			if tc.extraArgs != nil {
				if err := unstructured.SetNestedSlice(xr.Object, tc.extraArgs, "spec", "vllmConfig", "extraArgs"); err != nil {
					t.Fatal(err)
				}
			}
			input := compositionInput(t, "../composition/composition.yaml")
			// The RoleBinding is composed once its Role is observed.
			first := render(t, xr.Object, input, nil)
			role := composed(xr, "router-role", first.GetDesired().GetResources()["router-role"])
			rsp := render(t, xr.Object, input, map[string]*unstructured.Unstructured{"router-role": role})
			var (
				sa      corev1.ServiceAccount
				r       rbacv1.Role
				binding rbacv1.RoleBinding
			)
			for key, into := range map[string]any{"router-serviceaccount": &sa, "router-role": &r, "router-rolebinding": &binding} {
				res, ok := rsp.GetDesired().GetResources()[key]
				if !ok {
					t.Fatalf("no %s composed", key)
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(composed(xr, key, res).Object, into); err != nil {
					t.Fatal(err)
				}
			}
			createIdentity(ctx, t, ns, &sa, &r, &binding)
			tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{
				Spec: authnv1.TokenRequestSpec{Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3600)},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("TokenRequest: %v", err)
			}
			authz, err := authzv1client.NewForConfig(cp.ConfigForToken(tr.Status.Token))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, resource := range []string{"endpoints", "pods", "services"} {
				for _, verb := range []string{"create", "delete", "get", "list", "patch", "update", "watch"} {
					if allowed(ctx, t, authz, ns, "", resource, verb, "") {
						got = append(got, resource+" "+verb)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("what the router's token may do (-want +got):\n%s", diff)
			}
		})
	}
}
