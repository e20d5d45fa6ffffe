//go:build e2e_crossplane

package crossplane

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Labels the function puts on every engine and router pod (README, "What a
// ProductionStack becomes").
const (
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelModel     = "model"
)

// refusedPrefix starts the message of the stack's conditions when the
// function refuses a stack (fn/refuse.go); the function's error follows.
const refusedPrefix = "The function refused the stack, so nothing was applied and what runs is unchanged: "

// The stack's own condition types (status/status.go), besides Crossplane's Ready
// and Synced.
var stackConditions = []string{"EnginesReady", "RouterReady", "StorageReady"}

// A testStack is a ProductionStack a test applied: an XR of the namespaced
// XRD (xrd/definition.yaml), or a claim of the legacy XRD, whose XR is
// cluster-scoped. Either way the stack's objects are in obj's namespace, named
// after obj and labelled app.kubernetes.io/instance=<obj's name>.
type testStack struct {
	// obj is the manifest as last applied (never the server's copy).
	obj    *unstructured.Unstructured
	legacy bool
}

// applyStack applies a stack manifest (a copy: obj stays as written) and
// registers its deletion, which checks that everything it composed goes
// away with it and that it never saw an RBAC refusal.
func applyStack(t *testing.T, obj *unstructured.Unstructured, legacy bool) *testStack {
	t.Helper()
	s := &testStack{obj: obj.DeepCopy(), legacy: legacy}
	s.apply(t, s.obj)
	t.Cleanup(func() { s.delete(t) })
	return s
}

// apply server-side applies a new manifest of the stack (fields it lacks
// that an earlier manifest had are removed).
func (s *testStack) apply(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	s.obj = obj.DeepCopy()
	apply(t, obj.DeepCopy()) // Apply writes the server's answer into its argument
}

// edit applies the stack's manifest changed by f.
func (s *testStack) edit(t *testing.T, f func(spec map[string]any)) {
	t.Helper()
	o := s.obj.DeepCopy()
	spec, _ := o.Object["spec"].(map[string]any)
	f(spec)
	s.apply(t, o)
}

func (s *testStack) ns() string   { return s.obj.GetNamespace() }
func (s *testStack) name() string { return s.obj.GetName() }

func (s *testStack) String() string {
	if s.legacy {
		return "claim " + s.ns() + "/" + s.name()
	}
	return "XR " + s.ns() + "/" + s.name()
}

// object is the applied object (the XR or the claim) as the API server has
// it; nil when it does not exist.
func (s *testStack) object(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	return get(t, stackGVR, s.ns(), s.name())
}

// xr is the stack's XR; nil when it does not exist (yet).
func (s *testStack) xr(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	o := s.object(t)
	if !s.legacy || o == nil {
		return o
	}
	name, _, _ := unstructured.NestedString(o.Object, "spec", "resourceRef", "name")
	if name == "" {
		return nil
	}
	return get(t, legacyStackGVR, "", name)
}

// claim is the stack's claim (nil without the legacy XRD).
func (s *testStack) claim(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	if !s.legacy {
		return nil
	}
	return s.object(t)
}

// An objRef is a composed object, from the XR's resourceRefs.
type objRef struct{ APIVersion, Kind, Namespace, Name string }

func (r objRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// refs are the objects the XR composed.
func (s *testStack) refs(xr *unstructured.Unstructured) []objRef {
	// A v2 XR keeps Crossplane's fields under spec.crossplane, a legacy (v1
	// XRD) XR at the top of spec.
	path := []string{"spec", "crossplane", "resourceRefs"}
	if s.legacy {
		path = []string{"spec", "resourceRefs"}
	}
	l, _, _ := unstructured.NestedSlice(xr.Object, path...)
	var out []objRef
	for _, r := range l {
		m, _ := r.(map[string]any)
		ref := objRef{}
		ref.APIVersion, _ = m["apiVersion"].(string)
		ref.Kind, _ = m["kind"].(string)
		ref.Name, _ = m["name"].(string)
		ref.Namespace, _ = m["namespace"].(string)
		if ref.Namespace == "" { // the function composes namespaced kinds only
			ref.Namespace = s.ns()
		}
		out = append(out, ref)
	}
	return out
}

// getRef reads a composed object; nil when it does not exist (or its kind
// is unknown).
func getRef(t *testing.T, r objRef) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	ri, err := admin.Resource(u)
	if err != nil {
		return nil
	}
	got, err := ri.Get(context.Background(), r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("cannot get %s: %v", r, err)
	}
	return got
}

// snapshot reads every composed object of the stack, as JSON, by reference.
func (s *testStack) snapshot(t *testing.T) map[objRef]string {
	t.Helper()
	xr := s.xr(t)
	if xr == nil {
		t.Fatalf("%s has no XR", s)
	}
	out := map[objRef]string{}
	for _, r := range s.refs(xr) {
		u := getRef(t, r)
		if u == nil {
			out[r] = ""
			continue
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = string(b)
	}
	if len(out) == 0 {
		t.Fatalf("%s composed nothing", s)
	}
	return out
}

// unchanged compares the composed objects with a snapshot: every object is
// still there, byte for byte (the same resourceVersion), and there are no
// others.
func (s *testStack) unchanged(t *testing.T, before map[objRef]string) (bool, string) {
	t.Helper()
	now := s.snapshot(t)
	var diffs []string
	for _, r := range slices.SortedFunc(maps.Keys(before), cmpRef) {
		b, n := before[r], now[r]
		switch {
		case n == "":
			diffs = append(diffs, r.String()+" is gone")
		case b != n:
			diffs = append(diffs, fmt.Sprintf("%s changed (resourceVersion %s -> %s)", r, rv(b), rv(n)))
		}
	}
	for r := range now {
		if _, ok := before[r]; !ok {
			diffs = append(diffs, r.String()+" is new")
		}
	}
	return len(diffs) == 0, strings.Join(diffs, "; ")
}

func cmpRef(a, b objRef) int { return strings.Compare(a.String(), b.String()) }

func rv(js string) string {
	var m struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(js), &m)
	return m.Metadata.ResourceVersion
}

// condition returns the condition of type typ of an object (zero if absent).
type cond struct{ Status, Reason, Message string }

func condition(u *unstructured.Unstructured, typ string) cond {
	if u == nil {
		return cond{}
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["type"] == typ {
			var out cond
			out.Status, _ = m["status"].(string)
			out.Reason, _ = m["reason"].(string)
			out.Message, _ = m["message"].(string)
			return out
		}
	}
	return cond{}
}

// An expectation is what a Ready stack shows, from its manifest.
type expectation struct {
	models []expectedModel
	// router is the router's replicas, or on the inference extension the
	// endpoint pickers' of every model together.
	router   int64
	endpoint string
	// extension: the stack routes through the inference extension
	// (status.router.routerType inference-extension, the pickers' pods
	// instead of the router's, RouterReady saying every pool is accepted).
	extension bool
}

// routerComponent is the component label of the pods status.router counts.
func (e expectation) routerComponent() string {
	if e.extension {
		return "endpoint-picker"
	}
	return "router"
}

type expectedModel struct {
	name     string
	role     string // the group of a disaggregated model, else ""
	label    string // its pods' label "model"
	replicas int64
}

// expect reads what the stack's manifest asks for: each model's replicas
// (its own, else the stack's, else 1), the router's replicas and the
// endpoint (docs/configuration.md, "The API, field by field").
func (s *testStack) expect() expectation {
	spec, _ := s.obj.Object["spec"].(map[string]any)
	top := num(spec["replicas"], 1)
	var e expectation
	// add expects a model, or the groups of a disaggregated one, each with
	// its group's replicas, else the model's.
	x, ext := spec["inferenceExtension"].(map[string]any)
	ext = ext && x["enabled"] != false
	canaries := 0
	add := func(name string, replicas int64, d map[string]any, canary map[string]any) {
		if d == nil || d["enabled"] == false {
			e.models = append(e.models, expectedModel{name: name, label: name, replicas: replicas})
			if canary != nil {
				// A canary (model.canary), listed after its model: its
				// replicas (default 1) behind the extension, its weight's
				// share of the model's engines behind the router.
				canaries++
				e.models = append(e.models, expectedModel{name: name, label: name + "-canary", replicas: canaryReplicas(canary, replicas, ext)})
			}
			return
		}
		for _, role := range []string{"prefill", "decode"} {
			g, _ := d[role].(map[string]any)
			e.models = append(e.models, expectedModel{name: name, role: role, label: name + "-" + role, replicas: num(g["replicas"], replicas)})
		}
	}
	topDisagg, _ := spec["disaggregation"].(map[string]any)
	if ms, ok := spec["models"].([]any); ok {
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			name, _ := mm["name"].(string)
			d, _ := mm["disaggregation"].(map[string]any)
			if d == nil {
				d = topDisagg
			}
			c, _ := mm["canary"].(map[string]any)
			add(name, num(mm["replicas"], top), d, c)
		}
	} else {
		m, _ := spec["model"].(map[string]any)
		name, _ := m["name"].(string)
		c, _ := m["canary"].(map[string]any)
		add(name, top, topDisagg, c)
	}
	if ext {
		// Per model a pool and its pickers (picker.replicas each; one
		// pool for a disaggregated model's groups); the endpoint names the
		// first parent Gateway, /v1 with the model that holds it, and each
		// model's path /<model>/v1.
		e.extension = true
		var names []string
		for _, m := range e.models {
			if !slices.Contains(names, m.name) {
				names = append(names, m.name)
			}
		}
		p, _ := x["picker"].(map[string]any)
		e.router = num(p["replicas"], 1) * int64(len(names)+canaries) // a canary's pool has its own pickers
		gw := ""
		if refs, _ := x["parentRefs"].([]any); len(refs) > 0 {
			r, _ := refs[0].(map[string]any)
			ns, _ := r["namespace"].(string)
			if ns == "" {
				ns = s.ns()
			}
			gw = fmt.Sprintf("%s/%v", ns, r["name"])
		}
		// The first model holds the gateway's root (a stack the test
		// creates with its models); every model has its own path.
		var paths []string
		for i, n := range names {
			if i == 0 {
				paths = append(paths, "/v1 ("+n+")")
			}
			paths = append(paths, "/"+n+"/v1")
		}
		e.endpoint = "gateway " + gw + " " + strings.Join(paths, ", ")
		return e
	}
	rc, _ := spec["routerConfig"].(map[string]any)
	e.router = num(rc["replicas"], 1)
	svc, _ := rc["service"].(map[string]any)
	host := fmt.Sprintf("%s-router-service.%s.svc.cluster.local", s.name(), s.ns())
	if p := num(svc["port"], 80); p != 80 {
		host += fmt.Sprintf(":%d", p)
	}
	e.endpoint = "http://" + host + "/v1"
	return e
}

// canaryReplicas are a canary's engines (docs/canary.md): canary.replicas
// (default 1) behind the inference extension; behind the router
// round(weight × model / (100 − weight)), at least 1 above weight 0.
func canaryReplicas(c map[string]any, model int64, ext bool) int64 {
	if ext {
		return num(c["replicas"], 1)
	}
	w := num(c["weight"], 0)
	if w <= 0 {
		return 0
	}
	return max(1, (2*w*model+(100-w))/(2*(100-w)))
}

// num reads a number of a decoded manifest (float64 from YAML, int64 from
// the API server), or def when absent.
func num(v any, def int64) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return def
}

// podsOf lists the stack's pods of one component (and model).
func (s *testStack) podsOf(t *testing.T, component, model string) []unstructured.Unstructured {
	t.Helper()
	sel := labelInstance + "=" + s.name() + "," + labelComponent + "=" + component
	if model != "" {
		sel += "," + labelModel + "=" + model
	}
	return list(t, podGVR, s.ns(), sel)
}

// readyState says whether the stack is Ready as a whole, at this moment:
// Ready, Synced and the function's three conditions True on the XR (and the
// claim), status.models, readyModels, router and endpoint as the manifest and
// the pods say, every composed object present, every Deployment Available
// and every claim Bound.
func (s *testStack) readyState(t *testing.T, e expectation) (bool, string) {
	t.Helper()
	xr := s.xr(t)
	if xr == nil {
		return false, "no XR yet"
	}
	var bad []string
	check := func(what string, u *unstructured.Unstructured) {
		for _, c := range append([]string{"Ready", "Synced"}, stackConditions...) {
			if got := condition(u, c); got.Status != "True" {
				bad = append(bad, fmt.Sprintf("%s %s %s %s: %s", what, c, got.Status, got.Reason, got.Message))
			}
		}
	}
	check("XR", xr)
	if s.legacy {
		check("claim", s.claim(t))
	}

	// Status fields only the function writes, against the pods.
	models, _, _ := unstructured.NestedSlice(xr.Object, "status", "models")
	names := map[string]bool{} // a disaggregated model counts once
	for _, m := range e.models {
		names[m.name] = true
	}
	if got, want := str(xr, "status", "readyModels"), fmt.Sprintf("%d/%d", len(names), len(names)); got != want {
		bad = append(bad, fmt.Sprintf("status.readyModels %q, want %q", got, want))
	}
	if got := str(xr, "status", "endpoint"); got != e.endpoint {
		bad = append(bad, fmt.Sprintf("status.endpoint %q, want %q", got, e.endpoint))
	}
	if len(models) != len(e.models) {
		bad = append(bad, fmt.Sprintf("%d status.models, want %d", len(models), len(e.models)))
	}
	for i, m := range e.models {
		if i >= len(models) {
			break
		}
		sm, _ := models[i].(map[string]any)
		pods := s.podsOf(t, "serving-engine", m.label)
		ready := readyPods(pods)
		if role, _ := sm["role"].(string); sm["name"] != m.name || role != m.role || num(sm["replicas"], -1) != m.replicas || num(sm["readyReplicas"], -1) != m.replicas {
			bad = append(bad, fmt.Sprintf("status.models[%d] %v, want %s with %d/%d ready", i, sm, m.label, m.replicas, m.replicas))
		}
		if int64(len(pods)) != m.replicas || ready != len(pods) {
			bad = append(bad, fmt.Sprintf("model %s: %d pods, %d ready; want %d", m.label, len(pods), ready, m.replicas))
		}
	}
	pods := s.podsOf(t, e.routerComponent(), "")
	ready := readyPods(pods)
	r, _, _ := unstructured.NestedMap(xr.Object, "status", "router")
	if num(r["replicas"], -1) != e.router || num(r["readyReplicas"], -1) != e.router {
		bad = append(bad, fmt.Sprintf("status.router %v, want %d/%d ready", r, e.router, e.router))
	}
	if int64(len(pods)) != e.router || ready != len(pods) {
		bad = append(bad, fmt.Sprintf("%s: %d pods, %d ready; want %d", e.routerComponent(), len(pods), ready, e.router))
	}
	if e.extension {
		if r["routerType"] != "inference-extension" {
			bad = append(bad, fmt.Sprintf("status.router.routerType %v, want inference-extension", r["routerType"]))
		}
		want := fmt.Sprintf("%d/%d endpoint picker replicas ready; every model's InferencePool is accepted by its Gateway", e.router, e.router)
		if c := condition(xr, "RouterReady"); c.Message != want {
			bad = append(bad, fmt.Sprintf("XR RouterReady message %q, want %q", c.Message, want))
		}
	}

	// The composed objects.
	refs := s.refs(xr)
	if len(refs) == 0 {
		bad = append(bad, "no resourceRefs")
	}
	for _, ref := range refs {
		u := getRef(t, ref)
		switch {
		case u == nil:
			bad = append(bad, "no "+ref.String())
		case ref.Kind == "Deployment" && deploymentCondition(u, "Available") != "True":
			bad = append(bad, ref.String()+" not Available")
		case ref.Kind == "PersistentVolumeClaim" && str(u, "status", "phase") != "Bound":
			bad = append(bad, ref.String()+" "+str(u, "status", "phase"))
		}
	}
	return len(bad) == 0, strings.Join(bad, "; ")
}

// logStatus logs what the XR's status says, for the record.
func (s *testStack) logStatus(t *testing.T) {
	t.Helper()
	xr := s.xr(t)
	st, _, _ := unstructured.NestedMap(xr.Object, "status")
	delete(st, "conditions")
	b, _ := json.Marshal(st)
	t.Logf("%s: %d composed objects; status %s", s, len(s.refs(xr)), b)
}

// waitReady waits until the stack is Ready (readyState) for two TTLs.
func (s *testStack) waitReady(t *testing.T, e expectation, timeout time.Duration) {
	t.Helper()
	stable(t, 2*e2eTTL, timeout, s.String()+" Ready with its pods", func() (bool, string) { return s.readyState(t, e) })
}

func readyPods(pods []unstructured.Unstructured) int {
	n := 0
	for i := range pods {
		if ok, _ := podReady(&pods[i]); ok && pods[i].GetDeletionTimestamp() == nil {
			n++
		}
	}
	return n
}

func str(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, path...)
	return v
}

// eventsOf lists the events about an object (its UID), wherever they are
// (those of a cluster-scoped XR are in default). The API server keeps
// events for an hour, so this is the object's whole life in a test.
func eventsOf(t *testing.T, u *unstructured.Unstructured) []corev1.Event {
	t.Helper()
	l, err := admin.Core.Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(u.GetUID()),
	})
	if err != nil {
		t.Fatalf("cannot list the events of %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return l.Items
}

func formatEvents(evs []corev1.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s (x%d): %s", e.Type, e.Reason, e.Count, e.Message))
	}
	return "[" + strings.Join(out, " | ") + "]"
}

// checkNoRBACErrors fails the test if an event about the stack's XR or claim
// or a line of Crossplane's log says that the API server refused something
// (RBAC) for the stack: notably its RoleBinding, which Kubernetes refuses
// while the Role it binds does not exist (Crossplane may not bind arbitrary
// Roles), so the function composes it only once the Role is observed.
func (s *testStack) checkNoRBACErrors(t *testing.T) {
	t.Helper()
	objs := []*unstructured.Unstructured{s.xr(t)}
	if s.legacy {
		objs = append(objs, s.claim(t))
	}
	for _, o := range objs {
		if o == nil {
			continue
		}
		for _, e := range eventsOf(t, o) {
			m := strings.ToLower(e.Message)
			if strings.Contains(m, "forbidden") || strings.Contains(m, "escalat") ||
				(e.Type == corev1.EventTypeWarning && strings.Contains(m, "rolebinding")) {
				t.Errorf("%s %s: event %s %s: %s", o.GetKind(), o.GetName(), e.Type, e.Reason, e.Message)
			}
		}
	}
	log, err := xpc.Log("crossplane")
	if err != nil {
		t.Fatal(err)
	}
	// The router's RoleBinding, and every Role and RoleBinding the stack
	// composed (the endpoint pickers' on the inference extension, whose
	// Roles grant pods, inferencepools, inferenceobjectives and
	// inferencemodelrewrites, and leases and events with several pickers).
	rbac := []string{s.name() + "-deployment-access-binding"}
	if xr := s.xr(t); xr != nil {
		for _, r := range s.refs(xr) {
			if (r.Kind == "Role" || r.Kind == "RoleBinding") && !slices.Contains(rbac, r.Name) {
				rbac = append(rbac, r.Name)
			}
		}
	}
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		if !strings.Contains(line, s.ns()) || !(strings.Contains(l, "forbidden") || strings.Contains(l, "escalat")) {
			continue
		}
		if slices.ContainsFunc(rbac, func(name string) bool { return strings.Contains(line, name) }) {
			t.Errorf("Crossplane's log: %s", line)
		}
	}
}

// delete deletes the stack and checks that everything it composed, and
// their pods, go away with it (the claim's XR too); before, that it never
// saw an RBAC refusal.
func (s *testStack) delete(t *testing.T) {
	t.Helper()
	xr := s.xr(t)
	var refs []objRef
	if xr != nil {
		refs = s.refs(xr)
		s.checkNoRBACErrors(t)
	}
	start := time.Now()
	defer func() {
		t.Logf("%s deleted with everything it composed in %s", s, time.Since(start).Round(100*time.Millisecond))
	}()
	deleteAndWait(t, s.obj, 3*time.Minute)
	eventually(t, 3*time.Minute, s.String()+": everything it composed deleted", func() (bool, string) {
		var left []string
		if xr != nil && s.legacy && get(t, legacyStackGVR, "", xr.GetName()) != nil {
			left = append(left, "XR "+xr.GetName())
		}
		for _, r := range refs {
			if u := getRef(t, r); u != nil {
				left = append(left, fmt.Sprintf("%s (finalizers %v)", r, u.GetFinalizers()))
			}
		}
		for _, p := range list(t, podGVR, s.ns(), labelInstance+"="+s.name()) {
			left = append(left, "pod "+p.GetName())
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}
