package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/e2e/xcrd"
	"github.com/vllm-project/function-vllm-stack/fn"
	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// Crossplane's conventions for composed resources and XRs (Crossplane
// v2.2.1, internal/controller/apiextensions/composite and internal/xcrd).
const (
	fieldOwnerXR                  = "apiextensions.crossplane.io/composite"
	fieldOwnerComposedPrefix      = "apiextensions.crossplane.io/composed"
	labelComposite                = "crossplane.io/composite"
	labelClaimName                = "crossplane.io/claim-name"
	labelClaimNamespace           = "crossplane.io/claim-namespace"
	annotationCompositionResource = "crossplane.io/composition-resource-name"
)

// The XRs: the namespaced ProductionStack of xrd/definition.yaml and the
// cluster scoped XProductionStack of xrd/legacy/definition.yaml.
var (
	xrGVR       = schema.GroupVersionResource{Group: "serving.vllm.ai", Version: "v1alpha1", Resource: "productionstacks"}
	legacyXRGVR = schema.GroupVersionResource{Group: "serving.vllm.ai", Version: "v1alpha1", Resource: "xproductionstacks"}
)

// warnings records the API server's warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns and forgets the warnings so far.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// installXRCRDs installs the CRDs Crossplane generates for the XRs of
// xrd/definition.yaml (a namespaced ProductionStack) and of
// xrd/legacy/definition.yaml (a cluster scoped XProductionStack), and waits
// until they are established. The legacy XRD's claim CRD is not installed: it
// is also productionstacks.serving.vllm.ai (the two XRDs are alternatives).
func installXRCRDs(ctx context.Context) error {
	for _, def := range [][]byte{xrd.Definition, xrd.LegacyDefinition} {
		crd, err := generatedXRCRD(def)
		if err != nil {
			return err
		}
		if err := installCRD(ctx, crd); err != nil {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

func installCRD(ctx context.Context, crd *extv1.CustomResourceDefinition) error {
	u, err := toUnstructured(crd)
	if err != nil {
		return err
	}
	return createCRD(ctx, u, "apiextensions.crossplane.io/definition")
}

// createCRD creates a CRD, strictly validated, and waits until it is
// established.
func createCRD(ctx context.Context, u *unstructured.Unstructured, fieldManager string) error {
	d, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		return err
	}
	crds := d.Resource(extv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if _, err := crds.Create(ctx, u, metav1.CreateOptions{FieldManager: fieldManager, FieldValidation: "Strict"}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := &extv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, c); err != nil {
			return false, err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == extv1.NamesAccepted && cond.Status == extv1.ConditionFalse {
				return false, fmt.Errorf("names not accepted: %s", cond.Message)
			}
			if cond.Type == extv1.Established && cond.Status == extv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func generatedXRCRD(definition []byte) (*extv1.CustomResourceDefinition, error) {
	x, err := xcrd.Parse(definition)
	if err != nil {
		return nil, err
	}
	return xcrd.ForCompositeResource(x)
}

func toUnstructured(o any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// readYAML reads one YAML document into a map.
func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("cannot parse %s: %v", path, err)
	}
	return m
}

// compositionInput is the function's Input in a Composition file, as the
// Composition passes it.
func compositionInput(t *testing.T, path string) map[string]any {
	t.Helper()
	c := readYAML(t, path)
	steps, _, _ := unstructured.NestedSlice(c, "spec", "pipeline")
	for _, s := range steps {
		step, _ := s.(map[string]any)
		if in, ok := step["input"].(map[string]any); ok {
			return in
		}
	}
	t.Fatalf("no function input in %s", path)
	return nil
}

// namespace creates a namespace for one test and waits for its default
// ServiceAccount (pods cannot be created before it exists).
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount: %v", name, err)
	}
	return name
}

// maxRequirementsIterations is Crossplane's bound on a function's
// requirement loop (internal/xfn.MaxRequirementsIterations).
const maxRequirementsIterations = 5

// render runs the function in process as Crossplane v2.2.1 calls it
// (internal/xfn.FetchingFunctionRunner): the observed XR, the Composition's
// Input and the observed composed resources keyed by composition resource
// name; while the function's requirements change, the resources it requires
// are fetched from the API server and the function is called again. It fails
// the test on a Fatal result.
func render(t *testing.T, xr map[string]any, input map[string]any, observed map[string]*unstructured.Unstructured) *fnv1.RunFunctionResponse {
	t.Helper()
	rsp, fatal := tryRender(t, xr, input, observed)
	if fatal != "" {
		t.Fatalf("RunFunction returned a Fatal result: %s", fatal)
	}
	return rsp
}

// tryRender is render that returns the message of a Fatal result instead.
func tryRender(t *testing.T, xr map[string]any, input map[string]any, observed map[string]*unstructured.Unstructured) (*fnv1.RunFunctionResponse, string) {
	t.Helper()
	req := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "e2e"},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, xr)}},
		Desired:  &fnv1.State{},
	}
	if input != nil {
		req.Input = mustStruct(t, input)
	}
	if len(observed) > 0 {
		req.Observed.Resources = map[string]*fnv1.Resource{}
		for k, o := range observed {
			req.Observed.Resources[k] = &fnv1.Resource{Resource: mustStruct(t, o.Object)}
		}
	}
	var requirements *fnv1.Requirements
	for range maxRequirementsIterations + 1 {
		rsp, err := fn.New(logging.NewNopLogger()).RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
		if err != nil {
			t.Fatalf("RunFunction: %v", err)
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				return rsp, r.GetMessage()
			}
		}
		if proto.Equal(rsp.GetRequirements(), requirements) {
			return rsp, ""
		}
		requirements = rsp.GetRequirements()
		req.RequiredResources = map[string]*fnv1.Resources{}
		req.ExtraResources = map[string]*fnv1.Resources{}         //nolint:staticcheck // Crossplane still fills the deprecated field
		for name, sel := range requirements.GetExtraResources() { //nolint:staticcheck // as Crossplane does
			req.ExtraResources[name] = fetch(t, sel) //nolint:staticcheck // as Crossplane does
		}
		for name, sel := range requirements.GetResources() {
			req.RequiredResources[name] = fetch(t, sel)
		}
		req.Context = rsp.GetContext()
	}
	t.Fatalf("the function's requirements did not stabilize after %d iterations", maxRequirementsIterations)
	return nil, ""
}

// fetch gets the resources a selector of the function's requirements
// matches, as Crossplane's ExistingRequiredResourcesFetcher does: by name
// (nil when not found), or a list by labels sorted by namespace and name.
func fetch(t *testing.T, sel *fnv1.ResourceSelector) *fnv1.Resources {
	t.Helper()
	ctx := context.Background()
	gv, err := schema.ParseGroupVersion(sel.GetApiVersion())
	if err != nil {
		t.Fatalf("the function requires resources of a bad apiVersion %q: %v", sel.GetApiVersion(), err)
	}
	m, err := mapper.RESTMapping(gv.WithKind(sel.GetKind()).GroupKind(), gv.Version)
	if err != nil {
		t.Fatalf("the function requires unknown kind %s %s: %v", sel.GetApiVersion(), sel.GetKind(), err)
	}
	d, err := dynamic.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = d.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = d.Resource(m.Resource).Namespace(sel.GetNamespace())
	}
	if name, ok := sel.GetMatch().(*fnv1.ResourceSelector_MatchName); ok {
		u, err := ri.Get(ctx, name.MatchName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatalf("cannot get required resource: %v", err)
		}
		return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: mustStruct(t, u.Object)}}}
	}
	opts := metav1.ListOptions{}
	if ml, ok := sel.GetMatch().(*fnv1.ResourceSelector_MatchLabels); ok {
		opts.LabelSelector = labels.SelectorFromSet(ml.MatchLabels.GetLabels()).String()
	}
	list, err := ri.List(ctx, opts)
	if err != nil {
		t.Fatalf("cannot list required resources: %v", err)
	}
	items := list.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	out := &fnv1.Resources{Items: []*fnv1.Resource{}}
	for _, u := range items {
		out.Items = append(out.Items, &fnv1.Resource{Resource: mustStruct(t, u.Object)})
	}
	return out
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	// Through JSON: structpb takes only JSON types (no int64, no []string).
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s := &structpb.Struct{}
	if err := s.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return s
}

// composed turns a desired composed resource into the object Crossplane
// applies: its namespace forced to a namespaced XR's, the composite (and
// claim) labels, the composition resource name annotation, and a controller
// reference to the XR when the XR exists in the cluster.
func composed(xr *unstructured.Unstructured, key string, r *fnv1.Resource) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: r.GetResource().AsMap()}
	if xr.GetNamespace() != "" {
		u.SetNamespace(xr.GetNamespace())
	}
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[annotationCompositionResource] = key
	u.SetAnnotations(a)
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[labelComposite] = xrCompositeLabel(xr)
	if xl := xr.GetLabels(); xl[labelClaimName] != "" && xl[labelClaimNamespace] != "" {
		l[labelClaimName], l[labelClaimNamespace] = xl[labelClaimName], xl[labelClaimNamespace]
	}
	u.SetLabels(l)
	if xr.GetUID() != "" {
		u.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion:         xr.GetAPIVersion(),
			Kind:               xr.GetKind(),
			Name:               xr.GetName(),
			UID:                xr.GetUID(),
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}})
	}
	return u
}

func xrCompositeLabel(xr *unstructured.Unstructured) string {
	if v := xr.GetLabels()[labelComposite]; v != "" {
		return v
	}
	return xr.GetName()
}

// composedFieldOwner is Crossplane's field manager for an XR's composed
// resources: the prefix and a hash of the XR's name and group kind.
func composedFieldOwner(xr *unstructured.Unstructured) string {
	gk := xr.GroupVersionKind().GroupKind()
	return fmt.Sprintf("%s/%x", fieldOwnerComposedPrefix, sha256.Sum256([]byte(xr.GetName()+gk.String())))
}

// resourceFor maps an object's kind to its API resource.
func resourceFor(t *testing.T, d dynamic.Interface, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("no API resource for %s: %v", gvk, err)
	}
	if m.Scope.Name() == "namespace" {
		return d.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return d.Resource(m.Resource)
}

// apply server-side applies u as fieldManager with strict field validation
// and force, as Crossplane applies composed resources.
func apply(ctx context.Context, t *testing.T, d dynamic.Interface, u *unstructured.Unstructured, fieldManager string, dryRun bool) (*unstructured.Unstructured, error) {
	t.Helper()
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true), FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return resourceFor(t, d, u).Patch(ctx, u.GetName(), types.ApplyPatchType, b, opts)
}

func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", u.GetKind(), u.GetName())
	}
	return fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// conditions returns the response's conditions by type.
func conditions(rsp *fnv1.RunFunctionResponse) map[string]*fnv1.Condition {
	out := map[string]*fnv1.Condition{}
	for _, c := range rsp.GetConditions() {
		out[c.GetType()] = c
	}
	return out
}

// cond is an expected condition.
type cond struct {
	status  fnv1.Status
	reason  string
	message string
}

func (c cond) String() string {
	return fmt.Sprintf("%s %s %q", strings.TrimPrefix(c.status.String(), "STATUS_CONDITION_"), c.reason, c.message)
}

func condOf(c *fnv1.Condition) cond {
	if c == nil {
		return cond{}
	}
	return cond{status: c.GetStatus(), reason: c.GetReason(), message: c.GetMessage()}
}

func nested(o map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(o, path...)
	return v
}

// composeOnce builds a stack in ns with the library as the function does:
// the spec through JSON, as the function reads it from its request,
// decoded, validated (a refusal fails the test) and composed with the keys
// of observed observed.
func composeOnce(t *testing.T, ns string, spec map[string]any, in *v1beta1.Input, observed map[string]bool) map[string]runtime.Object {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var written any
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	decoded, raw, err := stack.DecodeSpec(written)
	if err != nil {
		t.Fatal(err)
	}
	s := stack.New(stack.Identity{Name: "s", Namespace: ns}, decoded, in)
	found := s.Validate(raw)
	if err := found.Err(); err != nil {
		t.Fatalf("the stack is refused: %v", err)
	}
	if len(found.Warnings) > 0 {
		t.Logf("warnings: %v", found.Warnings)
	}
	objs, err := s.Compose(stack.Keys(func(key string) bool { return observed[key] }))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]runtime.Object, len(objs))
	for _, o := range objs {
		out[o.Key] = o.Obj
	}
	return out
}

// composeTwice is the stack as a second reconcile composes it, every object
// of the first observed (a RoleBinding waits for its Role).
func composeTwice(t *testing.T, ns string, spec map[string]any, in *v1beta1.Input) map[string]runtime.Object {
	t.Helper()
	observed := map[string]bool{}
	for k := range composeOnce(t, ns, spec, in, nil) {
		observed[k] = true
	}
	return composeOnce(t, ns, spec, in, observed)
}

// createIdentity creates a rendered ServiceAccount, Role and RoleBinding in
// ns, strictly, as the API server takes them from Crossplane.
func createIdentity(ctx context.Context, t *testing.T, ns string, sa *corev1.ServiceAccount, role *rbacv1.Role, binding *rbacv1.RoleBinding) {
	t.Helper()
	strict := metav1.CreateOptions{FieldValidation: "Strict"}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, strict); err != nil {
		t.Fatalf("ServiceAccount: %v", err)
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, strict); err != nil {
		t.Fatalf("Role: %v", err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, strict); err != nil {
		t.Fatalf("RoleBinding: %v", err)
	}
}
