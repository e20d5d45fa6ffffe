// Package kubecheck checks composed Kubernetes objects the way the render
// tests always have: each object is decoded strictly into its Go type
// (unknown and duplicate fields are errors), then its names, labels, ports,
// selectors, quantities, probes, environment variables and the references
// between the objects are checked with Kubernetes' own validation functions
// where apimachinery has them, and pod templates with the API server's rules
// the function checks the spec with (internal/kubeapi: tolerations, affinity,
// security contexts, volume sources and mounts, pod annotations).
// Every object of a custom kind is held to its pinned CRD's whole schema and
// CEL rules, with the API server's own code (crds.go).
// test/render runs it on every golden render;
// test/fuzz on every response of a fuzzed RunFunction.
package kubecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
)

// Doc is one object: its JSON and the JSON decoded into a map.
type Doc struct {
	JSON []byte
	Obj  map[string]any
}

// NewDoc makes a Doc of an object in its map form.
func NewDoc(obj map[string]any) (Doc, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return Doc{}, err
	}
	return Doc{JSON: j, Obj: obj}, nil
}

func (d Doc) APIVersion() string { s, _ := d.Obj["apiVersion"].(string); return s }
func (d Doc) Kind() string       { s, _ := d.Obj["kind"].(string); return s }

// Meta returns a string field of the object's metadata.
func (d Doc) Meta(field string) string {
	m, _ := d.Obj["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// SplitDocs splits a YAML stream into its non-empty documents.
func SplitDocs(t TB, b []byte) []Doc {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []Doc
	for {
		y, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read YAML stream: %v", err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("YAML to JSON: %v\n%s", err, y)
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		d := Doc{JSON: j}
		if err := json.Unmarshal(j, &d.Obj); err != nil {
			t.Fatalf("decode %s: %v", j, err)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		t.Fatalf("no YAML documents")
	}
	return docs
}

// Stack is what the checks know of the stack the objects belong to.
type Stack struct {
	// XR is the composite resource: the controller owner of every object.
	XR Doc
	// Instance is the app.kubernetes.io/instance label of every object;
	// when empty, every object must carry the same non-empty one.
	Instance string
	// Namespace is the namespace of every object.
	Namespace string
	// Composite is the crossplane.io/composite label of every object, which
	// Crossplane sets to the XR's name; when empty it is not checked.
	Composite string
	// External lists objects the stack's pods reference but does not
	// compose ("Kind/name"). Secrets are always external.
	External []string
	// AsAPIServer checks what the user wrote into the objects as the API
	// server of Kubernetes 1.34 or later does, rather than by the stricter
	// rules the function keeps for what it writes itself: environment
	// variable names are printable ASCII other than '=' (not only C
	// identifiers), a port's protocol may be left for the API server to
	// default, and a resource request may be 0.
	AsAPIServer bool
}

// Check decodes every object strictly and checks it and the references
// between them, reporting each problem through t.
func Check(t TB, s Stack, objects []Doc) {
	t.Helper()
	st := &renderedStack{t: t, xr: s.XR, instance: s.Instance, composite: s.Composite, ns: s.Namespace, asAPIServer: s.AsAPIServer, byID: map[string]*object{}, external: map[string]bool{}}
	for _, e := range s.External {
		st.external[e] = true
	}
	for _, d := range objects {
		gvk := d.APIVersion() + "/" + d.Kind()
		o := &object{Doc: d, id: d.Kind() + "/" + d.Meta("name")}
		newTyped, typed := typedKinds[gvk]
		switch {
		case typed:
			o.typed = newTyped()
			strictDecode(t, o.id, d.JSON, o.typed)
			o.meta = *reflect.ValueOf(o.typed).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
		case untypedKinds[gvk]:
			var m struct {
				metav1.TypeMeta   `json:",inline"`
				metav1.ObjectMeta `json:"metadata"`
				Spec              map[string]any `json:"spec"`
			}
			strictDecode(t, o.id, d.JSON, &m)
			o.meta = m.ObjectMeta
		default:
			t.Errorf("%s: kind %s is neither typed nor in the untyped allowlist of test/internal/kubecheck", o.id, gvk)
			continue
		}
		if _, dup := st.byID[o.id]; dup {
			t.Errorf("%s is rendered twice", o.id)
		}
		st.byID[o.id] = o
		st.objects = append(st.objects, o)
	}
	if len(st.objects) == 0 {
		t.Fatalf("no composed objects")
	}
	for _, o := range st.objects {
		if !untypedKinds[o.APIVersion()+"/"+o.Kind()] && o.APIVersion() != lwsv1.GroupVersion.String() {
			continue
		}
		problems, err := CRDProblems(o.Obj)
		if err != nil {
			t.Fatalf("%s: cannot check it against its CRD: %v", o.id, err)
		}
		for _, p := range problems {
			t.Errorf("%s: its CRD refuses it: %s", o.id, p)
		}
	}
	st.check()
}

// Recorder is a TB that collects what the checks report.
type Recorder struct{ Errs []string }

func (r *Recorder) Helper() {}
func (r *Recorder) Errorf(format string, args ...any) {
	r.Errs = append(r.Errs, fmt.Sprintf(format, args...))
}
func (r *Recorder) Fatalf(format string, args ...any) {
	r.Errs = append(r.Errs, "FATAL "+fmt.Sprintf(format, args...))
	panic(r) // stops the checks like t.Fatalf; Run recovers it
}

// Run runs f (checks reporting to r) and returns what they reported.
func (r *Recorder) Run(f func()) (errs []string) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		errs = r.Errs
	}()
	f()
	return r.Errs
}

// Core kinds `crossplane beta validate` cannot check (it has no schemas for
// them): each rendered object of these kinds is decoded into its Go type with
// unknown and duplicate fields disallowed, then checked.
var typedKinds = map[string]func() any{
	"apps/v1/Deployment":                          func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                                func() any { return &batchv1.Job{} },
	"v1/Service":                                  func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim":                    func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/ConfigMap":                                func() any { return &corev1.ConfigMap{} },
	"v1/ServiceAccount":                           func() any { return &corev1.ServiceAccount{} },
	"rbac.authorization.k8s.io/v1/Role":           func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":    func() any { return &rbacv1.RoleBinding{} },
	"policy/v1/PodDisruptionBudget":               func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":      func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"networking.k8s.io/v1/Ingress":                func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy":          func() any { return &networkingv1.NetworkPolicy{} },
	"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet": func() any { return &lwsv1.LeaderWorkerSet{} },
}

// maxConfigMapBytes is the most a ConfigMap's keys and values may hold.
const maxConfigMapBytes = 1 << 20

// untypedKinds are CRD kinds this module has no Go types for: only their
// metadata is decoded strictly; their references are checked as maps.
var untypedKinds = map[string]bool{
	"keda.sh/v1alpha1/ScaledObject":                true,
	"gateway.networking.k8s.io/v1/HTTPRoute":       true,
	"monitoring.coreos.com/v1/ServiceMonitor":      true,
	"monitoring.coreos.com/v1/PrometheusRule":      true,
	"inference.networking.k8s.io/v1/InferencePool": true,
	// models[].inferenceObjectives, in the group the picker watches.
	"inference.networking.x-k8s.io/v1alpha2/InferenceObjective": true,
	"llm-d.ai/v1alpha2/InferenceObjective":                      true,
}

// withoutNameLabel are composition resources that span models (or, for the
// router's ServiceMonitor, select by component) and carry no
// app.kubernetes.io/name label.
var withoutNameLabel = map[string]bool{
	"engines-networkpolicy":          true,
	"engine-servicemonitor":          true,
	"servicemonitor-router":          true,
	"servicemonitor-endpoint-picker": true,
}

// object is one composed object, decoded.
type object struct {
	Doc
	id    string // Kind/name
	typed any    // pointer to its Go type, or nil for untypedKinds
	meta  metav1.ObjectMeta
}

// TB is the part of testing.T the checks report through (a Recorder
// collects it instead).
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

type renderedStack struct {
	t           TB
	xr          Doc
	instance    string // the stack's name: the claim's for a legacy XR; "" when unknown
	composite   string
	asAPIServer bool // see Stack.AsAPIServer
	ns          string
	external    map[string]bool
	objects     []*object
	byID        map[string]*object
	// groupPods are the LeaderWorkerSets' leader and worker pods, as the
	// Deployments that would run them (built once: checks compare them
	// by pointer); headless are the workers', which serve no API.
	groupPods []*appsv1.Deployment
	headless  map[*appsv1.Deployment]bool
}

// strictDecode decodes JSON into v with unknown and duplicate fields as errors.
func strictDecode(t TB, id string, j []byte, v any) {
	t.Helper()
	strict, err := kjson.UnmarshalStrict(j, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		t.Errorf("%s: decode into %T: %v", id, v, err)
	}
	for _, e := range strict {
		t.Errorf("%s: strict decode into %T: %v", id, v, e)
	}
}

func (st *renderedStack) errorf(o *object, format string, args ...any) {
	st.t.Helper()
	st.t.Errorf("%s: %s", o.id, fmt.Sprintf(format, args...))
}

func (st *renderedStack) fieldErrors(o *object, errs field.ErrorList) {
	st.t.Helper()
	for _, e := range errs {
		st.errorf(o, "%v", e)
	}
}

func (st *renderedStack) strs(o *object, fld string, errs []string) {
	st.t.Helper()
	for _, e := range errs {
		st.errorf(o, "%s: %s", fld, e)
	}
}

// get returns the rendered object kind/name, or nil.
func (st *renderedStack) get(kind, name string) *object { return st.byID[kind+"/"+name] }

// refExists checks a reference from o to kind/name: rendered, or listed as
// external for the stack.
func (st *renderedStack) refExists(o *object, fld, kind, name string) {
	st.t.Helper()
	if st.get(kind, name) == nil && !st.external[kind+"/"+name] {
		st.errorf(o, "%s refers to %s %q, which is not rendered (nor listed as external)", fld, kind, name)
	}
}

func (st *renderedStack) deployments() []*appsv1.Deployment {
	var ds []*appsv1.Deployment
	for _, o := range st.objects {
		if d, ok := o.typed.(*appsv1.Deployment); ok {
			ds = append(ds, d)
		}
	}
	if st.headless == nil {
		st.headless = map[*appsv1.Deployment]bool{}
		for _, o := range st.objects {
			l, ok := o.typed.(*lwsv1.LeaderWorkerSet)
			if !ok {
				continue
			}
			t := l.Spec.LeaderWorkerTemplate
			if t.LeaderTemplate != nil {
				st.groupPods = append(st.groupPods, groupDeployment(l.Name+" leaders", *t.LeaderTemplate))
			}
			w := groupDeployment(l.Name+" workers", t.WorkerTemplate)
			st.groupPods = append(st.groupPods, w)
			st.headless[w] = true
		}
	}
	return append(ds, st.groupPods...)
}

// groupDeployment is the Deployment that would run a LeaderWorkerSet
// template's pods, selecting them by their labels.
func groupDeployment(name string, t corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: t,
	}}
}

// selected returns the Deployments whose pod templates sel matches.
func (st *renderedStack) selected(o *object, fld string, sel *metav1.LabelSelector) []*appsv1.Deployment {
	st.t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		st.errorf(o, "%s is empty: it would select every pod", fld)
		return nil
	}
	st.fieldErrors(o, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, field.NewPath(fld)))
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		st.errorf(o, "%s: %v", fld, err)
		return nil
	}
	var ds []*appsv1.Deployment
	for _, d := range st.deployments() {
		if s.Matches(labels.Set(d.Spec.Template.Labels)) {
			ds = append(ds, d)
		}
	}
	return ds
}

func (st *renderedStack) check() {
	names := map[string]string{} // composition resource name -> object
	for _, o := range st.objects {
		st.checkMeta(o, names)
		switch v := o.typed.(type) {
		case *appsv1.Deployment:
			st.checkDeployment(o, v)
		case *corev1.Service:
			st.checkService(o, v)
		case *batchv1.Job:
			st.checkJob(o, v)
		case *corev1.PersistentVolumeClaim:
			st.checkPVC(o, v)
		case *corev1.ConfigMap:
			if len(v.Data)+len(v.BinaryData) == 0 {
				st.errorf(o, "has no data")
			}
			size := 0
			for k, d := range v.Data {
				st.strs(o, "data["+k+"]", validation.IsConfigMapKey(k))
				size += len(k) + len(d)
			}
			for k, d := range v.BinaryData {
				size += len(k) + len(d)
			}
			if size > maxConfigMapBytes {
				st.errorf(o, "holds %d bytes of keys and values, more than the API server's %d", size, maxConfigMapBytes)
			}
			st.checkDashboard(o, v)
		case *corev1.ServiceAccount:
		case *rbacv1.Role:
			st.checkRole(o, v)
		case *rbacv1.RoleBinding:
			st.checkRoleBinding(o, v)
		case *policyv1.PodDisruptionBudget:
			st.checkPDB(o, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			st.checkHPA(o, v)
		case *networkingv1.Ingress:
			st.checkIngress(o, v)
		case *networkingv1.NetworkPolicy:
			st.checkNetworkPolicy(o, v)
		case *lwsv1.LeaderWorkerSet:
			st.checkLeaderWorkerSet(o, v)
		case nil:
			st.checkUntyped(o)
		}
	}
	// Every Deployment's pods serve through a Service of the stack: a
	// Deployment without one is an object the function lost.
	for _, d := range st.deployments() {
		if st.headless[d] {
			continue // a multi-node group's workers serve no API
		}
		served := false
		for _, o := range st.objects {
			if svc, ok := o.typed.(*corev1.Service); ok && len(svc.Spec.Selector) > 0 &&
				labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				served = true
			}
		}
		if !served {
			st.t.Errorf("Deployment/%s: no rendered Service selects its pods", d.Name)
		}
	}
	// No two Deployments may select each other's pods: their ReplicaSets
	// would fight over them.
	for _, a := range st.deployments() {
		sa, err := metav1.LabelSelectorAsSelector(a.Spec.Selector)
		if err != nil {
			continue
		}
		for _, b := range st.deployments() {
			if a != b && sa.Matches(labels.Set(b.Spec.Template.Labels)) {
				st.t.Errorf("Deployment/%s: its selector matches the pods of Deployment/%s", a.Name, b.Name)
			}
		}
	}
}

// checkMeta: names, namespace, labels, annotations, owner reference and the
// stack's label contract.
func (st *renderedStack) checkMeta(o *object, names map[string]string) {
	m := withOwnerUIDs(o.meta)
	nameFn := apivalidation.NameIsDNSSubdomain
	if o.Kind() == "Service" || o.Kind() == "LeaderWorkerSet" { // an LWS names its headless Service
		nameFn = apivalidation.NameIsDNS1035Label
	}
	st.fieldErrors(o, apivalidation.ValidateObjectMeta(m, true, nameFn, field.NewPath("metadata")))
	if m.Namespace != st.ns {
		st.errorf(o, "namespace %q, want the stack's %q", m.Namespace, st.ns)
	}
	var ctrl []metav1.OwnerReference
	for _, r := range m.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			ctrl = append(ctrl, r)
		}
	}
	if len(ctrl) != 1 || ctrl[0].Kind != st.xr.Kind() || ctrl[0].Name != st.xr.Meta("name") || ctrl[0].APIVersion != st.xr.APIVersion() {
		st.errorf(o, "controller owner references %+v, want the XR %s %s", ctrl, st.xr.Kind(), st.xr.Meta("name"))
	}
	crn := m.Annotations["crossplane.io/composition-resource-name"]
	if crn == "" {
		st.errorf(o, "no crossplane.io/composition-resource-name annotation")
	} else if prev, dup := names[crn]; dup {
		st.errorf(o, "composition resource name %q is also used by %s", crn, prev)
	}
	names[crn] = o.id
	instance := st.instance
	if instance == "" {
		// Unknown: the first object's, which must not be empty.
		if st.instance, instance = m.Labels["app.kubernetes.io/instance"], m.Labels["app.kubernetes.io/instance"]; instance == "" {
			st.errorf(o, "no app.kubernetes.io/instance label")
		}
	}
	want := map[string]string{
		"app.kubernetes.io/instance":   instance,
		"app.kubernetes.io/part-of":    "vllm-stack",
		"app.kubernetes.io/managed-by": "crossplane",
	}
	if st.composite != "" {
		want["crossplane.io/composite"] = st.composite
	}
	for k, v := range want {
		if m.Labels[k] != v {
			st.errorf(o, "label %s = %q, want %q", k, m.Labels[k], v)
		}
	}
	if c := m.Labels["app.kubernetes.io/component"]; c == "" {
		st.errorf(o, "no app.kubernetes.io/component label")
	}
	if m.Labels["app.kubernetes.io/name"] == "" && !withoutNameLabel[crn] {
		st.errorf(o, "no app.kubernetes.io/name label")
	}
}

// withOwnerUIDs is a copy of m with a uid in every owner reference: crossplane
// render leaves the owner's uid empty (there is no API server to assign
// one); Crossplane sets it. The checks take everything else as it is.
func withOwnerUIDs(meta metav1.ObjectMeta) *metav1.ObjectMeta {
	m := meta.DeepCopy()
	for i := range m.OwnerReferences {
		if m.OwnerReferences[i].UID == "" {
			m.OwnerReferences[i].UID = "00000000-0000-0000-0000-000000000000"
		}
	}
	return m
}

func (st *renderedStack) checkDeployment(o *object, d *appsv1.Deployment) {
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
		st.errorf(o, "spec.replicas %d", *d.Spec.Replicas)
	}
	if p := d.Spec.ProgressDeadlineSeconds; p != nil && *p <= d.Spec.MinReadySeconds {
		st.errorf(o, "spec.progressDeadlineSeconds %d must be greater than minReadySeconds %d", *p, d.Spec.MinReadySeconds)
	}
	sel := st.selected(o, "spec.selector", d.Spec.Selector)
	if !slices.Contains(sel, d) {
		st.errorf(o, "spec.selector %v does not match its pod template labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	st.fieldErrors(o, metavalidation.ValidateLabels(d.Spec.Template.Labels, field.NewPath("spec.template.metadata.labels")))
	st.fieldErrors(o, apivalidation.ValidateAnnotations(d.Spec.Template.Annotations, field.NewPath("spec.template.metadata.annotations")))
	st.apiProblems(o, "spec.template.metadata.annotations", kubeapi.PodAnnotations(d.Spec.Template.Annotations, &d.Spec.Template.Spec))
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if d.Spec.Strategy.RollingUpdate != nil {
			st.errorf(o, "spec.strategy.rollingUpdate is set with type Recreate")
		}
	case appsv1.RollingUpdateDeploymentStrategyType, "": // "": the API server's default, RollingUpdate 25%/25%
		if ru := d.Spec.Strategy.RollingUpdate; ru != nil && isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) {
			st.errorf(o, "spec.strategy.rollingUpdate: maxSurge and maxUnavailable are both 0")
		}
	default:
		st.errorf(o, "spec.strategy.type %q", d.Spec.Strategy.Type)
	}
	st.checkPodSpec(o, &d.Spec.Template.Spec)
}

// checkJob checks a Job (a model cache's fill Job): a restart policy a Job
// takes (Never with a podFailurePolicy), labels that select no engine, and
// its pod template as a Deployment's.
func (st *renderedStack) checkJob(o *object, j *batchv1.Job) {
	p := j.Spec.Template.Spec
	switch {
	case p.RestartPolicy != corev1.RestartPolicyNever && p.RestartPolicy != corev1.RestartPolicyOnFailure:
		st.errorf(o, "spec.template.spec.restartPolicy %q: a Job takes Never or OnFailure", p.RestartPolicy)
	case j.Spec.PodFailurePolicy != nil && p.RestartPolicy != corev1.RestartPolicyNever:
		st.errorf(o, "spec.podFailurePolicy needs restartPolicy Never")
	}
	st.fieldErrors(o, metavalidation.ValidateLabels(j.Spec.Template.Labels, field.NewPath("spec.template.metadata.labels")))
	if c := j.Spec.Template.Labels["app.kubernetes.io/component"]; c == "serving-engine" || c == "" {
		st.errorf(o, "spec.template.metadata.labels component %q: the router, the engine Services and the pools would select its pod", c)
	}
	st.checkPodSpec(o, &p)
}

// checkLeaderWorkerSet checks a LeaderWorkerSet as LWS v0.7.0's webhooks
// default and validate one on create (internal/kubeapi.LeaderWorkerSetCreate,
// a port of pkg/webhooks/leaderworkerset_webhook.go: metadata, replicas ×
// size, the rollout's maxUnavailable and maxSurge as scaled against
// replicas, subgroups), its CRD's enums, and its pod templates as a
// Deployment's.
func (st *renderedStack) checkLeaderWorkerSet(o *object, l *lwsv1.LeaderWorkerSet) {
	s, t := l.Spec, l.Spec.LeaderWorkerTemplate
	if t.Size == nil {
		st.errorf(o, "spec.leaderWorkerTemplate.size is not set")
	}
	created := l.DeepCopy()
	created.ObjectMeta = *withOwnerUIDs(l.ObjectMeta)
	st.fieldErrors(o, kubeapi.LeaderWorkerSetCreate(created))
	switch t.RestartPolicy {
	case lwsv1.RecreateGroupOnPodRestart, lwsv1.NoneRestartPolicy, lwsv1.DeprecatedDefaultRestartPolicy, "":
	default:
		st.errorf(o, "spec.leaderWorkerTemplate.restartPolicy %q", t.RestartPolicy)
	}
	switch s.StartupPolicy {
	case lwsv1.LeaderCreatedStartupPolicy, lwsv1.LeaderReadyStartupPolicy, "":
	default:
		st.errorf(o, "spec.startupPolicy %q", s.StartupPolicy)
	}
	if r := s.RolloutStrategy.Type; r != lwsv1.RollingUpdateStrategyType && r != "" {
		st.errorf(o, "spec.rolloutStrategy.type %q", r)
	}
	// The StatefulSets LWS makes are <name>-<group>, and their pods'
	// controller-revision-hash label is <StatefulSet>-<10 characters>: a
	// label value of at most 63.
	groups := 1
	if s.Replicas != nil {
		groups = int(*s.Replicas)
	}
	if n := len(l.Name) + 1 + len(fmt.Sprint(max(groups-1, 0))) + 11; n > validation.LabelValueMaxLength {
		st.errorf(o, "name %q: its worker StatefulSets' revision labels would be %d characters, more than %d", l.Name, n, validation.LabelValueMaxLength)
	}
	for _, tmpl := range []*corev1.PodTemplateSpec{t.LeaderTemplate, &t.WorkerTemplate} {
		if tmpl == nil {
			continue
		}
		st.fieldErrors(o, metavalidation.ValidateLabels(tmpl.Labels, field.NewPath("spec.leaderWorkerTemplate.template.metadata.labels")))
		st.fieldErrors(o, apivalidation.ValidateAnnotations(tmpl.Annotations, field.NewPath("spec.leaderWorkerTemplate.template.metadata.annotations")))
		st.apiProblems(o, "spec.leaderWorkerTemplate.template.metadata.annotations", kubeapi.PodAnnotations(tmpl.Annotations, &tmpl.Spec))
		st.checkPodSpec(o, &tmpl.Spec)
	}
}

func isZero(v *intstr.IntOrString) bool {
	return v != nil && (v.String() == "0" || v.String() == "0%")
}

func (st *renderedStack) checkPodSpec(o *object, p *corev1.PodSpec) {
	fld := "spec.template.spec"
	if len(p.Containers) == 0 {
		st.errorf(o, "%s.containers is empty", fld)
	}
	volumes := map[string]bool{}
	for i, v := range p.Volumes {
		vf := fmt.Sprintf("%s.volumes[%d]", fld, i)
		st.strs(o, vf+".name", validation.IsDNS1123Label(v.Name))
		if volumes[v.Name] {
			st.errorf(o, "%s: duplicate volume %q", vf, v.Name)
		}
		volumes[v.Name] = true
		if kubeapi.SetPointers(v.VolumeSource) == 0 { // the function composes none: the API server would make it an emptyDir
			st.errorf(o, "%s (%s): no volume source", vf, v.Name)
		}
		st.apiProblems(o, vf, kubeapi.VolumeSource(v.Name, v.VolumeSource))
		if c := v.PersistentVolumeClaim; c != nil {
			st.refExists(o, vf+".persistentVolumeClaim.claimName", "PersistentVolumeClaim", c.ClaimName)
		}
		if c := v.ConfigMap; c != nil {
			st.refExists(o, vf+".configMap.name", "ConfigMap", c.Name)
			if cm := st.get("ConfigMap", c.Name); cm != nil {
				for _, it := range c.Items {
					if _, ok := cm.typed.(*corev1.ConfigMap).Data[it.Key]; !ok {
						st.errorf(o, "%s.configMap.items: key %q is not in ConfigMap %s", vf, it.Key, c.Name)
					}
				}
			}
		}
	}
	if sa := p.ServiceAccountName; sa != "" {
		st.refExists(o, fld+".serviceAccountName", "ServiceAccount", sa)
	}
	for i, s := range p.ImagePullSecrets {
		st.strs(o, fmt.Sprintf("%s.imagePullSecrets[%d].name", fld, i), validation.IsDNS1123Subdomain(s.Name))
	}
	st.fieldErrors(o, metavalidation.ValidateLabels(p.NodeSelector, field.NewPath(fld, "nodeSelector")))
	// The API server's rules of internal/kubeapi, for a pod in the host's
	// user namespace, with its own network namespace and no spec.os: so the
	// stack's pods. A disaggregated model's may share the host's PID and IPC
	// namespaces: then the IPC namespace's sysctls are refused, and
	// shareProcessNamespace too (ValidatePodSpec).
	if p.HostNetwork || p.HostUsers != nil || p.OS != nil {
		st.errorf(o, "%s sets hostNetwork, hostUsers or os, which the checks of internal/kubeapi assume unset", fld)
	}
	if p.HostPID && p.ShareProcessNamespace != nil && *p.ShareProcessNamespace {
		st.errorf(o, "%s: shareProcessNamespace and hostPID cannot both be enabled", fld)
	}
	st.apiProblems(o, fld+".tolerations", kubeapi.Tolerations(p.Tolerations))
	st.apiProblems(o, fld+".affinity", kubeapi.Affinity(p.Affinity))
	st.apiProblems(o, fld+".securityContext", kubeapi.PodSecurityContext(p.SecurityContext))
	if p.HostIPC {
		st.apiProblems(o, fld+".securityContext", kubeapi.HostIPCSysctls(p.SecurityContext))
	}

	containerNames := map[string]bool{}
	portNames := map[string]bool{}
	all := append(slices.Clone(p.InitContainers), p.Containers...)
	for i, c := range all {
		cf := fmt.Sprintf("%s.containers[%s]", fld, c.Name)
		if i < len(p.InitContainers) {
			cf = fmt.Sprintf("%s.initContainers[%s]", fld, c.Name)
		}
		st.strs(o, cf+".name", validation.IsDNS1123Label(c.Name))
		if containerNames[c.Name] {
			st.errorf(o, "%s: duplicate container name", cf)
		}
		containerNames[c.Name] = true
		if c.Image == "" {
			st.errorf(o, "%s.image is empty", cf)
		} else if c.Image != strings.TrimSpace(c.Image) {
			st.errorf(o, "%s.image %q has leading or trailing whitespace", cf, c.Image)
		}
		for _, port := range c.Ports {
			st.strs(o, cf+".ports.containerPort", validation.IsValidPortNum(int(port.ContainerPort)))
			if port.Name != "" {
				st.strs(o, cf+".ports.name", validation.IsValidPortName(port.Name))
				if portNames[port.Name] {
					st.errorf(o, "%s.ports: duplicate port name %q in the pod", cf, port.Name)
				}
				portNames[port.Name] = true
			}
			if port.Protocol != corev1.ProtocolTCP && port.Protocol != corev1.ProtocolUDP && port.Protocol != corev1.ProtocolSCTP && (port.Protocol != "" || !st.asAPIServer) {
				st.errorf(o, "%s.ports[%s].protocol %q", cf, port.Name, port.Protocol)
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			envName := validation.IsEnvVarName
			if st.asAPIServer {
				envName = validation.IsRelaxedEnvVarName
			}
			st.strs(o, cf+".env["+e.Name+"].name", envName(e.Name))
			if env[e.Name] {
				st.errorf(o, "%s.env: %s is set twice", cf, e.Name)
			}
			env[e.Name] = true
			if e.ValueFrom != nil {
				if e.Value != "" {
					st.errorf(o, "%s.env[%s]: value and valueFrom", cf, e.Name)
				}
				if n := kubeapi.SetPointers(*e.ValueFrom); n != 1 {
					st.errorf(o, "%s.env[%s].valueFrom: %d sources, want 1", cf, e.Name, n)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					st.refExists(o, cf+".env["+e.Name+"].valueFrom.configMapKeyRef", "ConfigMap", r.Name)
				}
			}
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				st.errorf(o, "%s.volumeMounts: volume %q does not exist", cf, m.Name)
			}
			if !path.IsAbs(m.MountPath) {
				st.errorf(o, "%s.volumeMounts[%s].mountPath %q is not absolute", cf, m.Name, m.MountPath)
			}
			if mounts[m.MountPath] {
				st.errorf(o, "%s.volumeMounts: %s is mounted twice", cf, m.MountPath)
			}
			mounts[m.MountPath] = true
			st.apiProblems(o, cf+".volumeMounts["+m.Name+"]", kubeapi.VolumeMount(m, kubeapi.Privileged(c.SecurityContext)))
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if i < len(p.InitContainers) && !sidecar && (c.StartupProbe != nil || c.ReadinessProbe != nil || c.LivenessProbe != nil || c.Lifecycle != nil) {
			st.errorf(o, "%s: an init container may have no probes and no lifecycle unless its restartPolicy is Always", cf)
		}
		for name, probe := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			if probe == nil {
				continue
			}
			if n := kubeapi.SetPointers(probe.ProbeHandler); n != 1 {
				st.errorf(o, "%s.%s: %d handlers, want 1", cf, name, n)
			}
			for fld, v := range map[string]int32{"initialDelaySeconds": probe.InitialDelaySeconds, "timeoutSeconds": probe.TimeoutSeconds,
				"periodSeconds": probe.PeriodSeconds, "successThreshold": probe.SuccessThreshold, "failureThreshold": probe.FailureThreshold} {
				if v < 0 {
					st.errorf(o, "%s.%s.%s %d is negative", cf, name, fld, v)
				}
			}
			if name != "readinessProbe" && probe.SuccessThreshold > 1 {
				st.errorf(o, "%s.%s.successThreshold %d must be 1", cf, name, probe.SuccessThreshold)
			}
			if h := probe.HTTPGet; h != nil {
				if !containerHasPort(c, h.Port) {
					st.errorf(o, "%s.%s.httpGet.port %s is not a port of the container", cf, name, h.Port.String())
				}
				if !strings.HasPrefix(h.Path, "/") {
					st.errorf(o, "%s.%s.httpGet.path %q", cf, name, h.Path)
				}
			}
		}
		st.checkResources(o, cf+".resources", c.Resources)
		st.apiProblems(o, cf+".securityContext", kubeapi.SecurityContext(c.SecurityContext))
		st.apiProblems(o, cf+".resources", kubeapi.ContainerResources(c.Resources))
	}
}

// apiProblems reports what the API server would refuse, found by the rules
// the function checks the spec with (internal/kubeapi).
func (st *renderedStack) apiProblems(o *object, at string, ps []kubeapi.Problem) {
	st.t.Helper()
	for _, p := range ps {
		st.errorf(o, "%s", p.At(at))
	}
}

// checkResources: requests at most limits, and extended resources (GPUs) with
// equal requests and limits, as the API server requires.
func (st *renderedStack) checkResources(o *object, fld string, r corev1.ResourceRequirements) {
	for name, req := range r.Requests {
		if req.Sign() < 0 || req.Sign() == 0 && !st.asAPIServer {
			st.errorf(o, "%s.requests.%s %s is not positive", fld, name, req.String())
		}
		lim, hasLim := r.Limits[name]
		if hasLim && req.Cmp(lim) > 0 {
			st.errorf(o, "%s: request %s %s exceeds its limit %s", fld, name, req.String(), lim.String())
		}
		if extended(name) && (!hasLim || req.Cmp(lim) != 0) {
			st.errorf(o, "%s: extended resource %s needs a limit equal to its request %s", fld, name, req.String())
		}
	}
}

func extended(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/") && !strings.HasPrefix(s, "requests.")
}

func containerHasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if (port.Type == intstr.Int && p.ContainerPort == port.IntVal) || (port.Type == intstr.String && p.Name == port.StrVal) {
			return true
		}
	}
	return false
}

func (st *renderedStack) checkService(o *object, s *corev1.Service) {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		st.errorf(o, "spec.type %q", s.Spec.Type)
	}
	if len(s.Spec.Ports) == 0 {
		st.errorf(o, "spec.ports is empty")
	}
	names := map[string]bool{}
	for _, p := range s.Spec.Ports {
		pf := "spec.ports[" + p.Name + "]"
		if p.Name != "" || len(s.Spec.Ports) > 1 {
			st.strs(o, pf+".name", validation.IsDNS1123Label(p.Name))
		}
		if names[p.Name] {
			st.errorf(o, "%s: duplicate port name", pf)
		}
		names[p.Name] = true
		st.strs(o, pf+".port", validation.IsValidPortNum(int(p.Port)))
		if p.TargetPort.Type == intstr.Int {
			st.strs(o, pf+".targetPort", validation.IsValidPortNum(p.TargetPort.IntValue()))
		} else {
			st.strs(o, pf+".targetPort", validation.IsValidPortName(p.TargetPort.StrVal))
		}
	}
	// Exactly one Deployment's pods, and the target port exists on them.
	ds := st.selected(o, "spec.selector", &metav1.LabelSelector{MatchLabels: s.Spec.Selector})
	if len(ds) != 1 {
		st.errorf(o, "spec.selector %v selects the pods of %d Deployments, want 1", s.Spec.Selector, len(ds))
	}
	for _, d := range ds {
		for _, p := range s.Spec.Ports {
			if !podHasPort(d.Spec.Template.Spec, p.TargetPort) {
				st.errorf(o, "spec.ports[%s].targetPort %s is not a container port of Deployment %s", p.Name, p.TargetPort.String(), d.Name)
			}
		}
	}
}

func podHasPort(p corev1.PodSpec, port intstr.IntOrString) bool {
	for _, c := range p.Containers {
		if containerHasPort(c, port) {
			return true
		}
	}
	return false
}

func (st *renderedStack) checkPVC(o *object, c *corev1.PersistentVolumeClaim) {
	st.apiProblems(o, "spec.accessModes", kubeapi.AccessModes(c.Spec.AccessModes))
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		st.errorf(o, "spec.resources.requests.storage must be positive")
	}
	if sc := c.Spec.StorageClassName; sc != nil && *sc != "" {
		st.strs(o, "spec.storageClassName", validation.IsDNS1123Subdomain(*sc))
	}
}

func (st *renderedStack) checkRole(o *object, r *rbacv1.Role) {
	if len(r.Rules) == 0 {
		st.errorf(o, "no rules")
	}
	for i, rule := range r.Rules {
		if len(rule.Verbs) == 0 || len(rule.APIGroups) == 0 || len(rule.Resources) == 0 {
			st.errorf(o, "rules[%d] needs verbs, apiGroups and resources: %+v", i, rule)
		}
	}
}

func (st *renderedStack) checkRoleBinding(o *object, rb *rbacv1.RoleBinding) {
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.RoleRef.Kind != "Role" {
		st.errorf(o, "roleRef %+v, want a Role of %s", rb.RoleRef, rbacv1.GroupName)
	}
	st.refExists(o, "roleRef.name", "Role", rb.RoleRef.Name)
	if len(rb.Subjects) == 0 {
		st.errorf(o, "no subjects")
	}
	for _, s := range rb.Subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != st.ns {
			st.errorf(o, "subject %+v, want a ServiceAccount in %s", s, st.ns)
		}
		st.refExists(o, "subjects.name", "ServiceAccount", s.Name)
	}
}

func (st *renderedStack) checkPDB(o *object, p *policyv1.PodDisruptionBudget) {
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		st.errorf(o, "exactly one of minAvailable and maxUnavailable must be set")
	}
	if ds := st.selected(o, "spec.selector", p.Spec.Selector); len(ds) != 1 {
		st.errorf(o, "spec.selector selects the pods of %d Deployments, want 1", len(ds))
	}
}

// scaled checks that an autoscaler targets a rendered Deployment which leaves
// spec.replicas to it.
func (st *renderedStack) scaled(o *object, apiVersion, kind, name string) {
	if apiVersion != "apps/v1" || kind != "Deployment" {
		st.errorf(o, "scaleTargetRef %s %s, want an apps/v1 Deployment", apiVersion, kind)
		return
	}
	t := st.get("Deployment", name)
	if t == nil {
		st.errorf(o, "scaleTargetRef: Deployment %q is not rendered", name)
		return
	}
	if r := t.typed.(*appsv1.Deployment).Spec.Replicas; r != nil {
		st.errorf(o, "Deployment %s sets spec.replicas %d: it would fight the autoscaler", name, *r)
	}
}

func (st *renderedStack) checkHPA(o *object, h *autoscalingv2.HorizontalPodAutoscaler) {
	st.scaled(o, h.Spec.ScaleTargetRef.APIVersion, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	if h.Spec.MinReplicas != nil && (*h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas) {
		st.errorf(o, "minReplicas %d, maxReplicas %d", *h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) == 0 {
		st.errorf(o, "no metrics")
	}
}

// servicePort checks a Service reference with a port (by number or name).
func (st *renderedStack) servicePort(o *object, fld, name string, number int32, portName string) {
	s := st.get("Service", name)
	if s == nil {
		st.errorf(o, "%s: Service %q is not rendered", fld, name)
		return
	}
	for _, p := range s.typed.(*corev1.Service).Spec.Ports {
		if (number != 0 && p.Port == number) || (portName != "" && p.Name == portName) {
			return
		}
	}
	want := portName
	if number != 0 {
		want = fmt.Sprint(number)
	}
	st.errorf(o, "%s: Service %s has no port %s", fld, name, want)
}

func (st *renderedStack) checkIngress(o *object, ing *networkingv1.Ingress) {
	if c := ing.Spec.IngressClassName; c != nil {
		st.strs(o, "spec.ingressClassName", validation.IsDNS1123Subdomain(*c))
	}
	st.apiProblems(o, "metadata.annotations", kubeapi.IngressClass(ing.Annotations, ing.Spec.IngressClassName))
	hosts := map[string]bool{}
	for i, r := range ing.Spec.Rules {
		if r.Host != "" {
			st.apiProblems(o, fmt.Sprintf("spec.rules[%d].host", i), kubeapi.IngressHost(r.Host))
			hosts[r.Host] = true
		}
		if r.HTTP == nil || len(r.HTTP.Paths) == 0 {
			st.errorf(o, "spec.rules[%d] has no paths", i)
			continue
		}
		for _, p := range r.HTTP.Paths {
			if !strings.HasPrefix(p.Path, "/") || p.PathType == nil {
				st.errorf(o, "spec.rules[%d]: path %q with pathType %v", i, p.Path, p.PathType)
			}
			if p.Backend.Service == nil {
				st.errorf(o, "spec.rules[%d]: backend is not a Service", i)
				continue
			}
			st.servicePort(o, fmt.Sprintf("spec.rules[%d].backend", i), p.Backend.Service.Name, p.Backend.Service.Port.Number, p.Backend.Service.Port.Name)
		}
	}
	for i, tls := range ing.Spec.TLS {
		st.strs(o, fmt.Sprintf("spec.tls[%d].secretName", i), validation.IsDNS1123Subdomain(tls.SecretName))
		for _, h := range tls.Hosts {
			if !hosts[h] {
				st.errorf(o, "spec.tls[%d]: host %q has no rule", i, h)
			}
		}
	}
}

func (st *renderedStack) checkNetworkPolicy(o *object, np *networkingv1.NetworkPolicy) {
	if ds := st.selected(o, "spec.podSelector", &np.Spec.PodSelector); len(ds) == 0 {
		st.errorf(o, "spec.podSelector selects no rendered pods")
	}
	for i, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.Type == intstr.Int {
				st.strs(o, fmt.Sprintf("spec.ingress[%d].ports", i), validation.IsValidPortNum(p.Port.IntValue()))
			}
		}
		for j, from := range r.From {
			for name, sel := range map[string]*metav1.LabelSelector{"podSelector": from.PodSelector, "namespaceSelector": from.NamespaceSelector} {
				if sel != nil {
					st.fieldErrors(o, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, field.NewPath("spec", "ingress").Index(i).Child("from").Index(j).Child(name)))
				}
			}
			if from.IPBlock != nil {
				st.apiProblems(o, fmt.Sprintf("spec.ingress[%d].from[%d].ipBlock", i, j), kubeapi.IPBlock(*from.IPBlock))
			}
		}
	}
}

// checkParentRefs holds an HTTPRoute's parentRefs to the CEL rules of the
// Gateway API CRD (v1.6.3, spec.parentRefs' x-kubernetes-validations):
// references to the same parent (group, kind, name, namespace as written)
// each have a sectionName, all different.
func (st *renderedStack) checkParentRefs(o *object, refs []any) {
	type parent struct{ group, kind, name, namespace string }
	sections := map[parent][]string{}
	var order []parent
	for _, r := range refs {
		r, _ := r.(map[string]any)
		str := func(k string) string { v, _ := r[k].(string); return v }
		p := parent{str("group"), str("kind"), str("name"), str("namespace")}
		if _, ok := sections[p]; !ok {
			order = append(order, p)
		}
		sections[p] = append(sections[p], str("sectionName"))
	}
	for _, p := range order {
		s := sections[p]
		if len(s) < 2 {
			continue
		}
		seen := map[string]bool{}
		for _, name := range s {
			if name == "" || seen[name] {
				st.errorf(o, "spec.parentRefs: %d references to %s %q need distinct sectionNames, have %q", len(s), p.kind, p.name, s)
				break
			}
			seen[name] = true
		}
	}
}

// checkUntyped checks the references of CRD kinds, read as maps.
func (st *renderedStack) checkUntyped(o *object) {
	spec, _ := o.Obj["spec"].(map[string]any)
	switch o.Kind() {
	case "ScaledObject":
		ref, _ := spec["scaleTargetRef"].(map[string]any)
		av, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		st.scaled(o, av, kind, name)
		minR, _ := spec["minReplicaCount"].(float64)
		maxR, _ := spec["maxReplicaCount"].(float64)
		if minR > maxR {
			st.errorf(o, "minReplicaCount %v exceeds maxReplicaCount %v", minR, maxR)
		}
		for _, p := range kedaWebhookProblems(spec) {
			st.errorf(o, "%s", p)
		}
	case "HTTPRoute":
		pr, _ := spec["parentRefs"].([]any)
		if len(pr) == 0 {
			st.errorf(o, "no parentRefs")
		}
		st.checkParentRefs(o, pr)
		hosts, _ := spec["hostnames"].([]any)
		for _, h := range hosts {
			h, _ := h.(string)
			st.strs(o, "spec.hostnames", validation.IsDNS1123Subdomain(strings.TrimPrefix(h, "*.")))
			if len(h) > validation.DNS1123SubdomainMaxLength { // the CRD's Hostname: maxLength 253, with the "*."
				st.errorf(o, "spec.hostnames: %q is longer than %d characters", h, validation.DNS1123SubdomainMaxLength)
			}
		}
		rules, _ := spec["rules"].([]any)
		if len(rules) == 0 {
			st.errorf(o, "no rules")
		}
		for i, r := range rules {
			r, _ := r.(map[string]any)
			refs, _ := r["backendRefs"].([]any)
			if len(refs) == 0 {
				st.errorf(o, "spec.rules[%d] has no backendRefs", i)
			}
			for _, b := range refs {
				b, _ := b.(map[string]any)
				name, _ := b["name"].(string)
				port, _ := b["port"].(float64)
				if b["group"] == "inference.networking.k8s.io" && b["kind"] == "InferencePool" {
					// The inference extension's: a pool, no port.
					if st.get("InferencePool", name) == nil {
						st.errorf(o, "spec.rules[%d].backendRefs: InferencePool %q is not rendered", i, name)
					}
					continue
				}
				st.servicePort(o, fmt.Sprintf("spec.rules[%d].backendRefs", i), name, int32(port), "")
			}
		}
	case "InferencePool":
		st.checkInferencePool(o, spec)
	case "InferenceObjective":
		// The picker keeps the objectives whose poolRef names its pool in
		// the pool's group.
		ref, _ := spec["poolRef"].(map[string]any)
		name, _ := ref["name"].(string)
		if ref["group"] != "inference.networking.k8s.io" || ref["kind"] != "InferencePool" || st.get("InferencePool", name) == nil {
			st.errorf(o, "spec.poolRef %v names no rendered InferencePool", ref)
		}
		if _, ok := spec["priority"].(float64); !ok {
			st.errorf(o, "spec.priority is not a number")
		}
	case "PrometheusRule":
		groups, _ := spec["groups"].([]any)
		if len(groups) == 0 {
			st.errorf(o, "no groups")
		}
		for i, g := range groups {
			g, _ := g.(map[string]any)
			if name, _ := g["name"].(string); name == "" {
				st.errorf(o, "spec.groups[%d] has no name", i)
			}
			rules, _ := g["rules"].([]any)
			for j, r := range rules {
				r, _ := r.(map[string]any)
				alert, _ := r["alert"].(string)
				expr, _ := r["expr"].(string)
				if alert == "" || expr == "" {
					st.errorf(o, "spec.groups[%d].rules[%d] lacks its alert or expr", i, j)
				}
				st.scrapedQuery(o, fmt.Sprintf("spec.groups[%d].rules[%d].expr", i, j), expr)
			}
		}
	case "ServiceMonitor":
		sel, _ := spec["selector"].(map[string]any)
		ml, _ := sel["matchLabels"].(map[string]any)
		set := labels.Set{}
		for k, v := range ml {
			set[k], _ = v.(string)
		}
		if len(set) == 0 {
			st.errorf(o, "spec.selector.matchLabels is empty")
		}
		eps, _ := spec["endpoints"].([]any)
		if len(eps) == 0 {
			st.errorf(o, "no endpoints")
		}
		var matched []string
		for _, s := range st.objects {
			svc, ok := s.typed.(*corev1.Service)
			if !ok || !labels.SelectorFromSet(set).Matches(labels.Set(svc.Labels)) {
				continue
			}
			matched = append(matched, svc.Name)
			for _, e := range eps {
				e, _ := e.(map[string]any)
				port, _ := e["port"].(string)
				st.servicePort(o, "spec.endpoints.port", svc.Name, 0, port)
			}
		}
		if len(matched) == 0 {
			st.errorf(o, "spec.selector %v selects no rendered Service", set)
		}
	}
}

// queriedService is a service matcher of a query the stack writes.
var queriedService = regexp.MustCompile(`service=~?"([^"]*)"`)

// scrapedQuery: a query of the stack's dashboard or alerts selects, by its
// service label (what the Prometheus Operator gives a target a
// ServiceMonitor scrapes), only rendered Services that a rendered
// ServiceMonitor selects, on a port the ServiceMonitor scrapes.
func (st *renderedStack) scrapedQuery(o *object, fld, expr string) {
	ms := queriedService.FindAllStringSubmatch(expr, -1)
	if len(ms) == 0 {
		st.errorf(o, "%s %q selects no Service", fld, expr)
	}
	for _, m := range ms {
		for _, name := range strings.Split(m[1], "|") {
			so := st.get("Service", name)
			var svc *corev1.Service
			if so != nil {
				svc, _ = so.typed.(*corev1.Service)
			}
			if svc == nil {
				st.errorf(o, "%s selects the Service %s, which is not rendered", fld, name)
				continue
			}
			scraped := false
			for _, mon := range st.objects {
				if kind, _ := mon.Obj["kind"].(string); kind != "ServiceMonitor" {
					continue
				}
				ml := unstructuredStrings(mon.Obj, "spec", "selector", "matchLabels")
				if len(ml) > 0 && labels.SelectorFromSet(ml).Matches(labels.Set(svc.Labels)) {
					scraped = true
				}
			}
			if !scraped {
				st.errorf(o, "%s selects the Service %s, which no rendered ServiceMonitor scrapes", fld, name)
			}
		}
	}
}

// unstructuredStrings is the map of strings at path of obj, nil when
// there is none.
func unstructuredStrings(obj map[string]any, path ...string) map[string]string {
	var cur any = obj
	for _, p := range path {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	m, _ := cur.(map[string]any)
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// checkDashboard: a Grafana dashboard the stack renders (a ConfigMap key
// vllm-stack-*.json) is JSON whose panels' queries select scraped
// Services (scrapedQuery).
func (st *renderedStack) checkDashboard(o *object, cm *corev1.ConfigMap) {
	for k, d := range cm.Data {
		if !strings.HasPrefix(k, "vllm-stack-") || !strings.HasSuffix(k, ".json") {
			continue
		}
		var dash struct {
			UID    string
			Panels []struct {
				Title   string
				Targets []struct{ Expr string }
			}
		}
		if err := json.Unmarshal([]byte(d), &dash); err != nil {
			st.errorf(o, "data[%s] is not JSON: %v", k, err)
			continue
		}
		if dash.UID == "" || len(dash.UID) > 40 {
			st.errorf(o, "data[%s]: uid %q is not 1 to 40 characters, as Grafana wants", k, dash.UID)
		}
		for _, p := range dash.Panels {
			for _, q := range p.Targets {
				st.scrapedQuery(o, "data["+k+"] panel "+p.Title, q.Expr)
			}
		}
	}
}

// checkInferencePool: the pool selects rendered serving pods of one model
// (and no headless worker; of a disaggregated model, its prefill and decode
// groups, which llm-d's picker tells apart by their llm-d.ai/role label and
// which serve the model under one name), targets their API port, and its picker's
// Service has the port it names (the CRD's rules: 1-64 selector labels,
// 1-8 target ports, a Service reference with a port).
func (st *renderedStack) checkInferencePool(o *object, spec map[string]any) {
	sel, _ := spec["selector"].(map[string]any)
	ml, _ := sel["matchLabels"].(map[string]any)
	set := labels.Set{}
	for k, v := range ml {
		set[k], _ = v.(string)
		st.strs(o, "spec.selector.matchLabels", validation.IsQualifiedName(k))
		st.strs(o, "spec.selector.matchLabels", validation.IsValidLabelValue(set[k]))
	}
	if len(set) == 0 || len(set) > 64 {
		st.errorf(o, "spec.selector.matchLabels has %d labels, want 1 to 64", len(set))
	}
	ports, _ := spec["targetPorts"].([]any)
	if len(ports) == 0 || len(ports) > 8 {
		st.errorf(o, "spec.targetPorts has %d ports, want 1 to 8", len(ports))
	}
	models := map[string]bool{}
	for _, d := range st.objects {
		dep, ok := d.typed.(*appsv1.Deployment)
		if !ok || !labels.SelectorFromSet(set).Matches(labels.Set(dep.Spec.Template.Labels)) {
			continue
		}
		model := dep.Spec.Template.Labels["model"]
		if role := dep.Spec.Template.Labels["llm-d.ai/role"]; role != "" {
			model = "served " + servedModel(dep)
		}
		models[model] = true
		for _, p := range ports {
			n, _ := p.(map[string]any)["number"].(float64)
			if !slices.ContainsFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
				return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return float64(cp.ContainerPort) == n })
			}) {
				st.errorf(o, "spec.targetPorts: %v is no container port of %s", n, dep.Name)
			}
		}
	}
	if len(models) != 1 {
		st.errorf(o, "spec.selector %v selects the pods of %d models, want 1", set, len(models))
	}
	ref, _ := spec["endpointPickerRef"].(map[string]any)
	name, _ := ref["name"].(string)
	port, _ := ref["port"].(map[string]any)
	n, _ := port["number"].(float64)
	if n == 0 {
		st.errorf(o, "spec.endpointPickerRef.port is required for a Service")
	}
	st.servicePort(o, "spec.endpointPickerRef", name, int32(n), "")
}

// servedModel is the name a serving pod's first container serves its model
// under: --served-model-name, else vllm serve's positional model.
func servedModel(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--served-model-name="); ok {
			return v
		}
		if a == "--served-model-name" && i+1 < len(args) {
			return args[i+1]
		}
	}
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// kedaWebhookProblems are what KEDA v2.20.2's admission webhook refuses in
// a ScaledObject's spec beyond its CRD's schema: no trigger, trigger names
// defined twice (apis/keda/v1alpha1/scaletriggers_types.go:56-86), a
// fallback without a trigger that is not cpu or memory
// (scaledobject_types.go:373-398).
func kedaWebhookProblems(spec map[string]any) []string {
	var out []string
	tr, _ := spec["triggers"].([]any)
	if len(tr) == 0 {
		out = append(out, "no triggers")
	}
	names := map[string]bool{}
	metric := false
	for _, t := range tr {
		t, _ := t.(map[string]any)
		if n, _ := t["name"].(string); n != "" {
			if names[n] {
				out = append(out, fmt.Sprintf("spec.triggers: triggerName %q is defined multiple times", n))
			}
			names[n] = true
		}
		metric = metric || t["type"] != "cpu" && t["type"] != "memory"
	}
	if spec["fallback"] != nil && !metric {
		out = append(out, "spec.fallback: at least one trigger (that is not cpu or memory) has to have the AverageValue type for the fallback to be enabled")
	}
	return out
}
