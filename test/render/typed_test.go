package render_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
	kjson "sigs.k8s.io/json"
)

// Core kinds `crossplane beta validate` cannot check (it has no schemas for
// them): each rendered object of these kinds is decoded into its Go type with
// unknown and duplicate fields disallowed, then checked.
var typedKinds = map[string]func() any{
	"apps/v1/Deployment":                       func() any { return &appsv1.Deployment{} },
	"v1/Service":                               func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim":                 func() any { return &corev1.PersistentVolumeClaim{} },
	"v1/ConfigMap":                             func() any { return &corev1.ConfigMap{} },
	"v1/ServiceAccount":                        func() any { return &corev1.ServiceAccount{} },
	"rbac.authorization.k8s.io/v1/Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"policy/v1/PodDisruptionBudget":            func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":   func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"networking.k8s.io/v1/Ingress":             func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
}

// untypedKinds are CRD kinds this module has no Go types for: only their
// metadata is decoded strictly; their references are checked as maps.
var untypedKinds = map[string]bool{
	"keda.sh/v1alpha1/ScaledObject":           true,
	"gateway.networking.k8s.io/v1/HTTPRoute":  true,
	"monitoring.coreos.com/v1/ServiceMonitor": true,
}

// withoutNameLabel are composition resources that span models (or, for the
// router's ServiceMonitor, select by component) and carry no
// app.kubernetes.io/name label.
var withoutNameLabel = map[string]bool{
	"engines-networkpolicy":  true,
	"engines-servicemonitor": true,
	"router-servicemonitor":  true,
}

// TestTypedObjects decodes every composed object of every golden file into its
// Kubernetes type, strictly, and checks names, labels, ports, selectors and the
// references between the objects.
func TestTypedObjects(t *testing.T) {
	for _, s := range stacks {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(goldenPath(s.name))
			if err != nil {
				t.Fatalf("%v (the golden files are written by TestGolden with -update)", err)
			}
			st := decodeStack(t, splitDocs(t, b), s)
			st.check()
		})
	}
}

// object is one composed object, decoded.
type object struct {
	doc
	id    string // Kind/name
	typed any    // pointer to its Go type, or nil for untypedKinds
	meta  metav1.ObjectMeta
}

// tb is the part of testing.T the checks report through (TestTypedChecks
// records it instead).
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

type renderedStack struct {
	t        tb
	xr       doc
	instance string // the stack's name: the claim's for a legacy XR
	ns       string
	external map[string]bool
	objects  []*object
	byID     map[string]*object
}

func decodeStack(t tb, docs []doc, s stack) *renderedStack {
	t.Helper()
	st := &renderedStack{t: t, xr: docs[0], byID: map[string]*object{}, external: map[string]bool{}}
	if st.xr.apiVersion() != "serving.vllm.ai/v1alpha1" || !strings.HasSuffix(st.xr.kind(), "ProductionStack") {
		t.Fatalf("the first rendered object is %s %s, want the XR", st.xr.apiVersion(), st.xr.kind())
	}
	for _, e := range s.external {
		st.external[e] = true
	}
	// The namespace and instance name the function derives from the XR
	// (legacy XRs are cluster scoped and named after their claim). The
	// rendered XR has no labels: read the input.
	in, err := os.ReadFile(filepath.Join(root, s.xr))
	if err != nil {
		t.Fatalf("%v", err)
	}
	input := splitDocs(t, in)[0]
	xrLabels, _ := input.obj["metadata"].(map[string]any)["labels"].(map[string]any)
	st.instance, st.ns = input.meta("name"), input.meta("namespace")
	if claim, ok := xrLabels["crossplane.io/claim-name"].(string); ok {
		st.instance = claim
		st.ns, _ = xrLabels["crossplane.io/claim-namespace"].(string)
	}
	if st.ns == "" {
		st.ns = "default"
	}
	for _, d := range docs[1:] {
		gvk := d.apiVersion() + "/" + d.kind()
		if gvk == "render.crossplane.io/v1beta1/Result" {
			if sev := d.obj["severity"]; sev != "SEVERITY_WARNING" && sev != "SEVERITY_NORMAL" {
				t.Errorf("result %v: severity %v in a successful render", d.obj["message"], sev)
			}
			continue
		}
		o := &object{doc: d, id: d.kind() + "/" + d.meta("name")}
		newTyped, typed := typedKinds[gvk]
		switch {
		case typed:
			o.typed = newTyped()
			strictDecode(t, o.id, d.json, o.typed)
			o.meta = *reflect.ValueOf(o.typed).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
		case untypedKinds[gvk]:
			var m struct {
				metav1.TypeMeta   `json:",inline"`
				metav1.ObjectMeta `json:"metadata"`
				Spec              map[string]any `json:"spec"`
			}
			strictDecode(t, o.id, d.json, &m)
			o.meta = m.ObjectMeta
		default:
			t.Errorf("%s: kind %s is neither typed nor in the untyped allowlist of typed_test.go", o.id, gvk)
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
	return st
}

// strictDecode decodes JSON into v with unknown and duplicate fields as errors.
func strictDecode(t tb, id string, j []byte, v any) {
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
	return ds
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
		case *corev1.PersistentVolumeClaim:
			st.checkPVC(o, v)
		case *corev1.ConfigMap:
			if len(v.Data)+len(v.BinaryData) == 0 {
				st.errorf(o, "has no data")
			}
			for k := range v.Data {
				st.strs(o, "data["+k+"]", validation.IsConfigMapKey(k))
			}
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
		case nil:
			st.checkUntyped(o)
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
	m := o.meta.DeepCopy()
	nameFn := apivalidation.NameIsDNSSubdomain
	if o.kind() == "Service" {
		nameFn = apivalidation.NameIsDNS1035Label
	}
	// crossplane render leaves the owner's uid empty (there is no API server
	// to assign one); Crossplane sets it. Check everything else.
	for i := range m.OwnerReferences {
		if m.OwnerReferences[i].UID == "" {
			m.OwnerReferences[i].UID = "00000000-0000-0000-0000-000000000000"
		}
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
	if len(ctrl) != 1 || ctrl[0].Kind != st.xr.kind() || ctrl[0].Name != st.xr.meta("name") || ctrl[0].APIVersion != st.xr.apiVersion() {
		st.errorf(o, "controller owner references %+v, want the XR %s %s", ctrl, st.xr.kind(), st.xr.meta("name"))
	}
	crn := m.Annotations["crossplane.io/composition-resource-name"]
	if crn == "" {
		st.errorf(o, "no crossplane.io/composition-resource-name annotation")
	} else if prev, dup := names[crn]; dup {
		st.errorf(o, "composition resource name %q is also used by %s", crn, prev)
	}
	names[crn] = o.id
	want := map[string]string{
		"app.kubernetes.io/instance":   st.instance,
		"app.kubernetes.io/part-of":    "vllm-stack",
		"app.kubernetes.io/managed-by": "crossplane",
		"crossplane.io/composite":      st.xr.meta("name"),
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

func (st *renderedStack) checkDeployment(o *object, d *appsv1.Deployment) {
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 0 {
		st.errorf(o, "spec.replicas %d", *d.Spec.Replicas)
	}
	sel := st.selected(o, "spec.selector", d.Spec.Selector)
	if !slices.Contains(sel, d) {
		st.errorf(o, "spec.selector %v does not match its pod template labels %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	st.fieldErrors(o, metavalidation.ValidateLabels(d.Spec.Template.Labels, field.NewPath("spec.template.metadata.labels")))
	st.fieldErrors(o, apivalidation.ValidateAnnotations(d.Spec.Template.Annotations, field.NewPath("spec.template.metadata.annotations")))
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
		if n := setFields(v.VolumeSource); n != 1 {
			st.errorf(o, "%s (%s): %d volume sources, want exactly 1", vf, v.Name, n)
		}
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
			if port.Protocol != corev1.ProtocolTCP && port.Protocol != corev1.ProtocolUDP && port.Protocol != corev1.ProtocolSCTP {
				st.errorf(o, "%s.ports[%s].protocol %q", cf, port.Name, port.Protocol)
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			st.strs(o, cf+".env["+e.Name+"].name", validation.IsEnvVarName(e.Name))
			if env[e.Name] {
				st.errorf(o, "%s.env: %s is set twice", cf, e.Name)
			}
			env[e.Name] = true
			if e.ValueFrom != nil {
				if e.Value != "" {
					st.errorf(o, "%s.env[%s]: value and valueFrom", cf, e.Name)
				}
				if n := setFields(*e.ValueFrom); n != 1 {
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
		}
		for name, probe := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			if probe == nil {
				continue
			}
			if n := setFields(probe.ProbeHandler); n != 1 {
				st.errorf(o, "%s.%s: %d handlers, want 1", cf, name, n)
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
	}
}

// checkResources: requests at most limits, and extended resources (GPUs) with
// equal requests and limits, as the API server requires.
func (st *renderedStack) checkResources(o *object, fld string, r corev1.ResourceRequirements) {
	for name, req := range r.Requests {
		if req.Sign() <= 0 {
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

// setFields counts the non-nil pointer fields of a struct (volume sources,
// env sources, probe handlers: exactly one may be set).
func setFields(v any) int {
	rv := reflect.ValueOf(v)
	n := 0
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
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
	if len(c.Spec.AccessModes) == 0 {
		st.errorf(o, "spec.accessModes is empty")
	}
	for _, m := range c.Spec.AccessModes {
		switch m {
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod:
		default:
			st.errorf(o, "spec.accessModes: %q", m)
		}
	}
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
	hosts := map[string]bool{}
	for i, r := range ing.Spec.Rules {
		if r.Host != "" {
			st.strs(o, fmt.Sprintf("spec.rules[%d].host", i), validation.IsDNS1123Subdomain(strings.TrimPrefix(r.Host, "*.")))
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
		}
	}
}

// checkUntyped checks the references of CRD kinds, read as maps.
func (st *renderedStack) checkUntyped(o *object) {
	spec, _ := o.obj["spec"].(map[string]any)
	switch o.kind() {
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
		if tr, _ := spec["triggers"].([]any); len(tr) == 0 {
			st.errorf(o, "no triggers")
		}
	case "HTTPRoute":
		if pr, _ := spec["parentRefs"].([]any); len(pr) == 0 {
			st.errorf(o, "no parentRefs")
		}
		hosts, _ := spec["hostnames"].([]any)
		for _, h := range hosts {
			h, _ := h.(string)
			st.strs(o, "spec.hostnames", validation.IsDNS1123Subdomain(strings.TrimPrefix(h, "*.")))
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
				st.servicePort(o, fmt.Sprintf("spec.rules[%d].backendRefs", i), name, int32(port), "")
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

// recorder collects what the checks report.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, "FATAL "+fmt.Sprintf(format, args...))
	panic(r) // stops the check like t.Fatalf; run recovers it
}

// run runs the checks on a rendered stream and returns what they reported.
func (r *recorder) run(rendered []byte, s stack) (errs []string) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		errs = r.errs
	}()
	decodeStack(r, splitDocs(r, rendered), s).check()
	return r.errs
}

// TestTypedChecks breaks the golden output of the serving seed stack (every
// object composed, the RoleBinding included) in one place at a time and
// expects the checks of TestTypedObjects to say so.
func TestTypedChecks(t *testing.T) {
	b, err := os.ReadFile(goldenPath("observed-ready"))
	if err != nil {
		t.Fatal(err)
	}
	seed := string(b)
	for _, c := range []struct {
		name, old, new, want string
	}{
		{name: "UnknownField", old: "  strategy:\n    type: Recreate\n", new: "  strategy:\n    type: Recreate\n  minReadySecond: 5\n",
			want: `Deployment/test-stack-llama-3-2-1b-instruct-deployment-vllm: strict decode into *v1.Deployment: unknown field "spec.minReadySecond"`},
		{name: "WrongType", old: "  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/component: serving-engine", new: "  replicas: \"1\"\n  selector:\n    matchLabels:\n      app.kubernetes.io/component: serving-engine",
			want: "Deployment/test-stack-llama-3-2-1b-instruct-deployment-vllm: decode into *v1.Deployment"},
		{name: "PortNameTooLong", old: "name: container-port\n", new: "name: container-port-x\n",
			want: "ports.name: must be no more than 15 characters"},
		{name: "ServiceSelectsNothing", old: "  selector:\n    app.kubernetes.io/component: serving-engine\n    app.kubernetes.io/instance: test-stack\n", new: "  selector:\n    app.kubernetes.io/component: serving-engine\n    app.kubernetes.io/instance: other\n",
			want: "Service/test-stack-llama-3-2-1b-instruct-engine-service: spec.selector map[app.kubernetes.io/component:serving-engine app.kubernetes.io/instance:other app.kubernetes.io/name:llama-3-2-1b-instruct] selects the pods of 0 Deployments, want 1"},
		{name: "DuplicateEnv", old: "- name: CUDA_VISIBLE_DEVICES\n", new: "- name: VLLM_LOG_LEVEL\n",
			want: "env: VLLM_LOG_LEVEL is set twice"},
		{name: "BadLabelValue", old: "    model: Llama-3.2-1B-Instruct\n  name: test-stack-llama-3-2-1b-instruct-deployment-vllm", new: "    model: Llama 3.2\n  name: test-stack-llama-3-2-1b-instruct-deployment-vllm",
			want: `metadata.labels: Invalid value: "Llama 3.2"`},
		{name: "ServiceNameNotDNS1035", old: "  name: test-stack-router-service\n", new: "  name: 1-router-service\n",
			want: `Service/1-router-service: metadata.name: Invalid value: "1-router-service"`},
		{name: "GPUWithoutLimit", old: "          limits:\n            nvidia.com/gpu: \"1\"\n", new: "",
			want: "extended resource nvidia.com/gpu needs a limit equal to its request 1"},
		{name: "MissingRole", old: "  kind: Role\n  name: test-stack-reader\n", new: "  kind: Role\n  name: test-stack-writer\n",
			want: `roleRef.name refers to Role "test-stack-writer", which is not rendered`},
		{name: "MissingClaim", old: "          claimName: test-stack-llama-3-2-1b-instruct-storage-claim\n", new: "          claimName: elsewhere\n",
			want: `refers to PersistentVolumeClaim "elsewhere", which is not rendered`},
		{name: "UnknownKind", old: "apiVersion: v1\nkind: ServiceAccount\n", new: "apiVersion: v1\nkind: ServiceAccountz\n",
			want: "kind v1/ServiceAccountz is neither typed nor in the untyped allowlist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(seed, c.old) {
				t.Fatalf("the seed golden has no %q", c.old)
			}
			broken := strings.Replace(seed, c.old, c.new, 1)
			errs := (&recorder{}).run([]byte(broken), stacks[0])
			for _, e := range errs {
				if strings.Contains(e, c.want) {
					return
				}
			}
			t.Errorf("no error contains %q; got:\n%s", c.want, strings.Join(errs, "\n"))
		})
	}
	// And the unbroken seed passes.
	if errs := (&recorder{}).run(b, stacks[0]); len(errs) != 0 {
		t.Errorf("the seed golden fails the checks:\n%s", strings.Join(errs, "\n"))
	}
}
