package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/adaptersync"
)

// adapterSyncImage is the Input's adapterSync.image: the function's own
// image, which the sync container runs as `function adapter-sync`.
const adapterSyncImage = "xpkg.crossplane.io/vllm-project/function-vllm-stack:v0.0.0-e2e"

// TestAdapterSyncRBAC checks the RBAC the stack library renders for the
// runtime adapters' sync container against the real API server: the
// rendered ServiceAccount, Role and RoleBinding are created, and
// internal/adaptersync's in-cluster patcher, the code the sync container
// runs, patches its pod's annotations with a token of that ServiceAccount
// bound to the pod, as the kubelet projects it. With the same token nothing
// broader works. The rendered Role less patch on pods is refused the patch,
// which shows the verb is needed.
//
// The patcher reads the API server's address from KUBERNETES_SERVICE_HOST
// and _PORT, so the test sets them (t.Setenv) and its sub-tests run one
// after the other.
func TestAdapterSyncRBAC(t *testing.T) {
	ctx := context.Background()
	installSyncPolicy(ctx, t)
	u, err := url.Parse(cp.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())

	t.Run("rendered", func(t *testing.T) {
		s := newAdapterSyncScenario(ctx, t, "adapter-sync-ok", nil)
		sa, err := corev1client.NewForConfig(cp.ConfigForToken(s.token))
		if err != nil {
			t.Fatal(err)
		}
		awaitSyncPolicy(ctx, t, sa.Pods(s.ns), s.pod)
		ann := syncAnnotations()
		s.patchUntil(ctx, t, ann)
		s.wantAnnotations(ctx, t, ann)

		// A Role cannot name a pod not yet created (nor one per pod of a
		// Deployment), so the rendered Role grants patch on every pod of
		// the namespace; the admission policy of
		// composition/clusterrole.yaml refuses another pod
		// (TestAdapterSyncTokenConfined tries the rest).
		other := *s.patcher
		other.Name = s.sibling
		// (The patcher clips the API server's answer.)
		if err := other.PatchAnnotations(ctx, map[string]string{adaptersync.AnnotationModified: "x"}); err == nil || !strings.Contains(err.Error(), ": 403 ") || !strings.Contains(err.Error(), "denied request: the adapter sync identity may change only the pod") {
			t.Errorf("patching another pod of the namespace: got %v, want 403 %s", err, notItsPod)
		}

		// Nothing broader: each answered 403.
		merge := []byte(`{"metadata":{"annotations":{"e2e":"x"}}}`)
		for what, call := range map[string]func() error{
			"get its own pod": func() error {
				_, err := sa.Pods(s.ns).Get(ctx, s.pod, metav1.GetOptions{})
				return err
			},
			"list pods": func() error {
				_, err := sa.Pods(s.ns).List(ctx, metav1.ListOptions{})
				return err
			},
			"watch pods": func() error {
				w, err := sa.Pods(s.ns).Watch(ctx, metav1.ListOptions{})
				if err == nil {
					w.Stop()
				}
				return err
			},
			"create a pod": func() error {
				_, err := sa.Pods(s.ns).Create(ctx, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "intruder"},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				}, metav1.CreateOptions{})
				return err
			},
			"delete its own pod": func() error {
				return sa.Pods(s.ns).Delete(ctx, s.pod, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			},
			"patch its own pod's status": func() error {
				_, err := sa.Pods(s.ns).Patch(ctx, s.pod, types.MergePatchType, []byte(`{"status":{"message":"x"}}`), metav1.PatchOptions{}, "status")
				return err
			},
			"patch a pod in another namespace": func() error {
				_, err := sa.Pods(s.elsewhere).Patch(ctx, s.pod, types.MergePatchType, merge, metav1.PatchOptions{})
				return err
			},
			"get a secret": func() error {
				_, err := sa.Secrets(s.ns).Get(ctx, s.secret, metav1.GetOptions{})
				return err
			},
			"list secrets": func() error {
				_, err := sa.Secrets(s.ns).List(ctx, metav1.ListOptions{})
				return err
			},
			"patch a service": func() error {
				_, err := sa.Services(s.ns).Patch(ctx, s.service, types.MergePatchType, merge, metav1.PatchOptions{})
				return err
			},
			"patch a configmap": func() error {
				_, err := sa.ConfigMaps(s.ns).Patch(ctx, s.configMap, types.MergePatchType, merge, metav1.PatchOptions{})
				return err
			},
		} {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("%s with the sync container's token: got %v, want 403 Forbidden", what, err)
			}
		}
		// The patcher itself, on a pod of another namespace.
		away := *s.patcher
		away.Namespace = s.elsewhere
		if err := away.PatchAnnotations(ctx, map[string]string{adaptersync.AnnotationModified: "x"}); err == nil || !strings.Contains(err.Error(), ": 403 ") {
			t.Errorf("the patcher on a pod of namespace %s: got %v, want 403", s.elsewhere, err)
		}
	})

	t.Run("role without pods/patch", func(t *testing.T) {
		var rendered []rbacv1.PolicyRule
		s := newAdapterSyncScenario(ctx, t, "adapter-sync-no-patch", func(r *adapterSyncRendered) {
			rendered = r.role.Rules
			r.role.Rules = withoutVerbs(t, r.role.Rules, []string{"pods/patch"})
		})
		// Forbidden, and not for want of the binding: it was created
		// before the token, and the rendered rules, put back, are enough.
		err := s.patcher.PatchAnnotations(ctx, syncAnnotations())
		if err == nil || !strings.Contains(err.Error(), ": 403 ") || !strings.Contains(err.Error(), `cannot patch resource \"pods\"`) {
			t.Fatalf("patching the pod with the Role less patch on pods: got %v, want 403 cannot patch resource \"pods\"", err)
		}
		s.wantAnnotations(ctx, t, nil)
		role, err := kube.RbacV1().Roles(s.ns).Get(ctx, s.role, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules = rendered
		if _, err := kube.RbacV1().Roles(s.ns).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		ann := syncAnnotations()
		s.patchUntil(ctx, t, ann)
		s.wantAnnotations(ctx, t, ann)
	})
}

// syncAnnotations are what the sync container writes after loading an
// adapter: the router's lora-modified and each adapter's state.
func syncAnnotations() map[string]string {
	status, _ := json.Marshal(map[string]string{"sql": adaptersync.Loaded})
	return map[string]string{
		adaptersync.AnnotationModified: time.Now().UTC().Format(time.RFC3339Nano),
		adaptersync.AnnotationStatus:   string(status),
	}
}

// adapterSyncRendered is what the stack library composes, as the function
// does, for a stack of one model with runtime adapters: the sync
// container's ServiceAccount, Role and RoleBinding, and the engine's pod
// template.
type adapterSyncRendered struct {
	sa      *corev1.ServiceAccount
	role    *rbacv1.Role
	binding *rbacv1.RoleBinding
	engine  corev1.PodTemplateSpec
}

// renderAdapterSync composes the stack in ns as a second reconcile does,
// every object of the first observed (the RoleBinding waits for its Role).
func renderAdapterSync(t *testing.T, ns string) *adapterSyncRendered {
	t.Helper()
	spec := map[string]any{
		"resources": map[string]any{"gpu": "1"},
		"model": map[string]any{
			"name": "m", "modelURL": "org/m",
			"enableLoRA": true, "enableRuntimeAdapters": true,
			"adapters": []any{map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "org/sql-lora"}}},
		},
	}
	input := &v1beta1.Input{AdapterSync: &v1beta1.AdapterSyncInput{Image: adapterSyncImage}}
	objs := composeTwice(t, ns, spec, input)
	if _, ok := composeOnce(t, ns, spec, input, nil)["adapter-sync-rolebinding"]; ok {
		t.Error("the RoleBinding is composed before its Role is observed")
	}
	r := &adapterSyncRendered{}
	var ok [4]bool
	r.sa, ok[0] = objs["adapter-sync-serviceaccount"].(*corev1.ServiceAccount)
	r.role, ok[1] = objs["adapter-sync-role"].(*rbacv1.Role)
	r.binding, ok[2] = objs["adapter-sync-rolebinding"].(*rbacv1.RoleBinding)
	var d *appsv1.Deployment
	if d, ok[3] = objs["engine-m"].(*appsv1.Deployment); ok[3] {
		r.engine = d.Spec.Template
	}
	if slices.Contains(ok[:], false) {
		t.Fatalf("the stack composes no adapter sync ServiceAccount, Role, RoleBinding or engine Deployment of the kinds expected: %v (keys %v)", ok, slices.Sorted(maps.Keys(objs)))
	}
	// The engine pods run as the rendered ServiceAccount, beside the sync
	// container running the Input's image.
	if got := r.engine.Spec.ServiceAccountName; got != r.sa.Name {
		t.Fatalf("the engine pods run as ServiceAccount %q, the stack renders %q", got, r.sa.Name)
	}
	if !slices.ContainsFunc(r.engine.Spec.Containers, func(c corev1.Container) bool {
		return c.Image == adapterSyncImage && slices.Contains(append(slices.Clone(c.Command), c.Args...), "adapter-sync")
	}) {
		t.Fatalf("no container of the engine pod runs %s adapter-sync: %v", adapterSyncImage, r.engine.Spec.Containers)
	}
	if !slices.ContainsFunc(r.binding.Subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == r.sa.Name && s.Namespace == ns
	}) || r.binding.RoleRef.Name != r.role.Name {
		t.Fatalf("the RoleBinding does not bind Role %s to ServiceAccount %s/%s: %+v", r.role.Name, ns, r.sa.Name, r.binding)
	}
	return r
}

// An adapterSyncScenario is a namespace with the rendered ServiceAccount,
// Role and RoleBinding (one change made), an engine pod running as the
// ServiceAccount, a token of it bound to the pod, and the in-cluster
// patcher built from that token and the cluster's CA as the sync container
// builds it from its projected volume. Around it, objects the token must
// not reach: a sibling engine pod, a Secret, a Service, a ConfigMap, and a
// pod of the same name in another namespace.
type adapterSyncScenario struct {
	ns, elsewhere                            string
	pod, sibling, secret, service, configMap string
	role                                     string
	token                                    string
	patcher                                  *adaptersync.InClusterPatcher
}

func newAdapterSyncScenario(ctx context.Context, t *testing.T, ns string, change func(*adapterSyncRendered)) *adapterSyncScenario {
	t.Helper()
	namespace(t, ns)
	s := &adapterSyncScenario{
		ns: ns, elsewhere: namespace(t, ns+"-elsewhere"),
		pod: "engine-0", sibling: "engine-1", secret: "hf-token", service: "engine", configMap: "other",
	}
	r := renderAdapterSync(t, ns)
	if change != nil {
		change(r)
	}
	s.role = r.role.Name
	createIdentity(ctx, t, ns, r.sa, r.role, r.binding)
	// The engine pods: labelled as the rendered template labels them,
	// running as its ServiceAccount; one container is enough.
	c := r.engine.Spec.Containers[0]
	pod := func(ns, name string) *corev1.Pod {
		t.Helper()
		p, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(r.engine.Labels)},
			Spec: corev1.PodSpec{
				ServiceAccountName:           r.engine.Spec.ServiceAccountName,
				AutomountServiceAccountToken: ptr.To(false),
				Containers:                   []corev1.Container{{Name: c.Name, Image: c.Image}},
			},
		}, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatalf("pod %s/%s: %v", ns, name, err)
		}
		return p
	}
	own := pod(ns, s.pod)
	pod(ns, s.sibling)
	if _, err := kube.CoreV1().ServiceAccounts(s.elsewhere).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: r.sa.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod(s.elsewhere, s.pod)
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.secret}, StringData: map[string]string{"token": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.service}, Spec: corev1.ServiceSpec{
		Selector: r.engine.Labels, Ports: []corev1.ServicePort{{Port: 8000}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.configMap}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The token the kubelet projects into the sync container: the
	// ServiceAccount's, bound to its pod.
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, r.sa.Name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{
			Audiences:         []string{cluster.ServiceAccountIssuer},
			ExpirationSeconds: ptr.To[int64](3607),
			BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: own.Name, UID: own.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	s.token = tr.Status.Token
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(s.token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), cp.Config().CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.patcher, err = adaptersync.NewInClusterPatcherIn(dir, s.pod, ns); err != nil {
		t.Fatal(err)
	}
	return s
}

// patchUntil patches the pod's annotations with the patcher until the API
// server allows it (the authorizer sees a new RoleBinding or rule shortly
// after it is written).
func (s *adapterSyncScenario) patchUntil(ctx context.Context, t *testing.T, ann map[string]string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = s.patcher.PatchAnnotations(ctx, ann)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("the sync container's patcher cannot patch its pod %s/%s with the rendered RBAC: %v", s.ns, s.pod, last)
	}
}

// wantAnnotations: the pod has exactly ann (nil: none).
func (s *adapterSyncScenario) wantAnnotations(ctx context.Context, t *testing.T, ann map[string]string) {
	t.Helper()
	p, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(p.Annotations, ann) {
		t.Errorf("pod %s/%s annotations: got %v, want %v", s.ns, s.pod, p.Annotations, ann)
	}
}

// syncPolicyName names the ValidatingAdmissionPolicy of
// composition/clusterrole.yaml and its binding.
const syncPolicyName = "function-vllm-stack-adapter-sync"

var installSyncPolicyOnce sync.Once

// installSyncPolicy creates the ValidatingAdmissionPolicy and its binding
// of composition/clusterrole.yaml, decoded strictly into their API types,
// as README's install applies them; checks that the API server type-checks
// every expression without a warning; and waits until the policy is in
// force (the admission plugin learns of it through an informer).
func installSyncPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	installSyncPolicyOnce.Do(func() {
		b, err := os.ReadFile("../composition/clusterrole.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var policy *admissionv1.ValidatingAdmissionPolicy
		var binding *admissionv1.ValidatingAdmissionPolicyBinding
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatal(err)
			}
			switch meta.Kind {
			case "ValidatingAdmissionPolicy":
				policy = &admissionv1.ValidatingAdmissionPolicy{}
				err = yaml.UnmarshalStrict([]byte(doc), policy)
			case "ValidatingAdmissionPolicyBinding":
				binding = &admissionv1.ValidatingAdmissionPolicyBinding{}
				err = yaml.UnmarshalStrict([]byte(doc), binding)
			}
			if err != nil {
				t.Fatalf("composition/clusterrole.yaml: %s: %v", meta.Kind, err)
			}
		}
		if policy == nil || binding == nil {
			t.Fatal("composition/clusterrole.yaml has no ValidatingAdmissionPolicy or no binding")
		}
		c, err := admissionv1client.NewForConfig(cp.Config())
		if err != nil {
			t.Fatal(err)
		}
		strict := metav1.CreateOptions{FieldValidation: "Strict"}
		if _, err := c.ValidatingAdmissionPolicies().Create(ctx, policy, strict); err != nil {
			t.Fatalf("ValidatingAdmissionPolicy: %v", err)
		}
		if _, err := c.ValidatingAdmissionPolicyBindings().Create(ctx, binding, strict); err != nil {
			t.Fatalf("ValidatingAdmissionPolicyBinding: %v", err)
		}
		// The API server type-checks the expressions against the Pod
		// type and writes what it finds in the status.
		var checked *admissionv1.ValidatingAdmissionPolicy
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			checked, err = c.ValidatingAdmissionPolicies().Get(ctx, policy.Name, metav1.GetOptions{})
			return err == nil && checked.Status.ObservedGeneration == checked.Generation && checked.Status.TypeChecking != nil, nil
		})
		if err != nil {
			t.Fatalf("the policy is not type-checked: %v (status %+v)", err, checked.Status)
		}
		if w := checked.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
			t.Fatalf("the API server finds type errors in the policy's expressions: %+v", w)
		}
	})
}

// syncDenial is the API server's answer when the policy denies a request
// on pod name for reason.
func syncDenial(pod, reason string) string {
	return fmt.Sprintf(`pods %q is forbidden: ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s`, pod, syncPolicyName, syncPolicyName, reason)
}

// awaitSyncPolicy waits until the API server enforces the policy for the
// identity of pods (a client with a token of the sync ServiceAccount that
// RBAC lets patch pods): the admission plugin learns of a new policy and
// binding through an informer, and RBAC of a new RoleBinding likewise. The
// probe is a dry run of a label change on pod name, which the policy denies
// for any token; a dry run passes admission without changing anything.
func awaitSyncPolicy(ctx context.Context, t *testing.T, pods corev1client.PodInterface, name string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = pods.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), "ValidatingAdmissionPolicy '"+syncPolicyName+"'"), nil
	})
	if err != nil {
		t.Fatalf("the policy %s is not enforced on pod %s: the last probe got %v", syncPolicyName, name, last)
	}
}

// The policy's denial reasons (composition/clusterrole.yaml).
const (
	notItsPod    = "the adapter sync identity may change only the pod its token is bound to"
	notPodBound  = "the adapter sync identity needs a token bound to its pod, as the kubelet projects it"
	notSpec      = "the adapter sync identity may not change a pod's spec"
	notLabels    = "the adapter sync identity may not change a pod's labels"
	notOtherAnns = "the adapter sync identity may change only the annotations lora-modified and vllm.ai/lora-adapters"
)

// TestAdapterSyncTokenConfined is issue 38's test: with the rendered
// ServiceAccount, Role and RoleBinding and the admission policy of
// composition/clusterrole.yaml, the sync container's own token (a
// TokenRequest bound to its pod, as the kubelet projects it) can patch its
// own pod's two annotations and nothing else of any pod: not another pod's
// image, labels or annotations, not its own pod's labels, image,
// activeDeadlineSeconds or another annotation. A token of the same
// ServiceAccount not bound to a pod can change nothing. The pods are the
// rendered engine pod template, every container and volume of it.
func TestAdapterSyncTokenConfined(t *testing.T) {
	ctx := context.Background()
	installSyncPolicy(ctx, t)
	ns := namespace(t, "adapter-sync-confined")
	r := renderAdapterSync(t, ns)
	createIdentity(ctx, t, ns, r.sa, r.role, r.binding)
	pod := func(name string) *corev1.Pod {
		t.Helper()
		p, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(r.engine.Labels), Annotations: map[string]string{"kept": "as is"}},
			Spec:       *r.engine.Spec.DeepCopy(),
		}, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatalf("pod %s/%s as rendered: %v", ns, name, err)
		}
		return p
	}
	own, other := pod("engine-0"), pod("engine-1")

	token := func(bound *corev1.Pod) corev1client.PodInterface {
		t.Helper()
		spec := authnv1.TokenRequestSpec{Audiences: []string{cluster.ServiceAccountIssuer}, ExpirationSeconds: ptr.To[int64](3607)}
		if bound != nil {
			spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: bound.Name, UID: bound.UID}
		}
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, r.sa.Name, &authnv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenRequest: %v", err)
		}
		c, err := corev1client.NewForConfig(cp.ConfigForToken(tr.Status.Token))
		if err != nil {
			t.Fatal(err)
		}
		return c.Pods(ns)
	}
	syncToken, unbound := token(own), token(nil)

	status := `{"sql":"loaded"}`
	owned := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, adaptersync.AnnotationModified, time.Now().UTC().Format(time.RFC3339Nano), adaptersync.AnnotationStatus, status)
	merge := func(pods corev1client.PodInterface, name, patch string) error {
		_, err := pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	image := func(p *corev1.Pod) string {
		return fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"image":"attacker.example/evil:1"}]}}`, p.Spec.Containers[0].Name)
	}

	awaitSyncPolicy(ctx, t, syncToken, own.Name)
	if err := merge(syncToken, own.Name, owned); err != nil {
		t.Fatalf("the sync container's token cannot patch its own pod's two annotations: %v", err)
	}

	labels := `{"metadata":{"labels":{"model":"stolen"}}}`
	for _, c := range []struct {
		what   string
		token  corev1client.PodInterface
		pod    *corev1.Pod
		patch  string
		denied string
	}{
		{"another pod's image", syncToken, other, image(other), notItsPod},
		{"another pod's labels", syncToken, other, labels, notItsPod},
		{"another pod's annotations", syncToken, other, owned, notItsPod},
		{"its own pod's labels", syncToken, own, labels, notLabels},
		{"its own pod's image", syncToken, own, image(own), notSpec},
		{"its own pod's activeDeadlineSeconds", syncToken, own, `{"spec":{"activeDeadlineSeconds":1}}`, notSpec},
		{"another annotation of its own pod", syncToken, own, `{"metadata":{"annotations":{"kept":"changed"}}}`, notOtherAnns},
		{"a new annotation on its own pod", syncToken, own, `{"metadata":{"annotations":{"prometheus.io/scrape":"true"}}}`, notOtherAnns},
		{"its own pod's two annotations, with a token not bound to a pod", unbound, own, owned, notPodBound},
		{"another pod's labels, with a token not bound to a pod", unbound, other, labels, notPodBound},
		{"another pod's image, with a token not bound to a pod", unbound, other, image(other), notPodBound},
	} {
		// A strategic merge patch, as kubectl patch and set image send it.
		_, err := c.token.Patch(ctx, c.pod.Name, types.StrategicMergePatchType, []byte(c.patch), metav1.PatchOptions{})
		if want := syncDenial(c.pod.Name, c.denied); !apierrors.IsForbidden(err) || err.Error() != want {
			t.Errorf("patching %s: got %v, want 403 %s", c.what, err, want)
		}
	}

	// What the pods are now: the sync token's own annotations on its pod,
	// everything else as created.
	for _, p := range []*corev1.Pod{own, other} {
		got, err := kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"kept": "as is"}
		if p == own {
			want[adaptersync.AnnotationStatus] = status
		}
		delete(got.Annotations, adaptersync.AnnotationModified)
		if !maps.Equal(got.Annotations, want) || !maps.Equal(got.Labels, p.Labels) || got.Spec.Containers[0].Image != p.Spec.Containers[0].Image || got.Spec.ActiveDeadlineSeconds != nil {
			t.Errorf("pod %s after the attempts: annotations %v labels %v image %s activeDeadlineSeconds %v", p.Name, got.Annotations, got.Labels, got.Spec.Containers[0].Image, got.Spec.ActiveDeadlineSeconds)
		}
	}
	// The owned annotations, once more: only this succeeds.
	if err := merge(syncToken, own.Name, owned); err != nil {
		t.Errorf("patching its own pod's two annotations: %v", err)
	}
}
