//go:build e2e_crossplane

package crossplane

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

var (
	roleGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	roleBindingGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// gatewayParents are the parentRefs of a stack's inferenceExtension, each
// as a pool's status names it (namespace defaulted to the stack's).
func (s *testStack) gatewayParents() []map[string]any {
	refs, _, _ := unstructured.NestedSlice(s.obj.Object, "spec", "inferenceExtension", "parentRefs")
	var out []map[string]any
	for _, r := range refs {
		m, _ := r.(map[string]any)
		ns, _ := m["namespace"].(string)
		if ns == "" {
			ns = s.ns()
		}
		out = append(out, map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": ns, "name": m["name"]})
	}
	return out
}

// poolAcceptance reports whether the Gateway stand-in accepted a pool for
// every parent of the stack (Accepted and ResolvedRefs True, for the pool's
// generation), and what the pool's status says.
func (s *testStack) poolAcceptance(pool *unstructured.Unstructured) (bool, string) {
	parents, _, _ := unstructured.NestedSlice(pool.Object, "status", "parents")
	ok := len(parents) > 0
	for _, want := range s.gatewayParents() {
		found := false
		for _, p := range parents {
			m, _ := p.(map[string]any)
			ref, _ := m["parentRef"].(map[string]any)
			if m["controllerName"] != xp.GatewayControllerName || !maps.Equal(ref, want) {
				continue
			}
			found = true
			conds, _ := m["conditions"].([]any)
			for _, typ := range []string{"Accepted", "ResolvedRefs"} {
				c := condition(&unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}, typ)
				if c.Status != "True" {
					ok = false
				}
			}
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if num(cm["observedGeneration"], -1) != pool.GetGeneration() {
					ok = false
				}
			}
		}
		ok = ok && found
	}
	return ok, fmt.Sprintf("InferencePool %s: status.parents %v", pool.GetName(), parents)
}

// checkExtension: a Ready stack on the inference extension has, per model,
// the InferencePool S-M-pool whose selector is exactly the model's serving
// pods (the engine pods of that model and no other), accepted through the
// model's HTTPRoute S-M-httproute by the Gateway of its parentRefs, which
// sends /M (stripped) to the pool alone, and / too for the first model,
// which holds the gateway's root; its endpoint picker
// S-M-epp, an Available Deployment whose pods are Ready (the kubelet
// stand-in's doing: the picker image does not run here), behind the Service
// the pool's endpointPickerRef names; and the picker's RoleBinding binding
// its Role, created no earlier, to its ServiceAccount. Nothing about the
// stack was refused
// (RBAC): Crossplane holds what the pickers' Roles grant.
func checkExtension(t *testing.T, s *testStack) {
	t.Helper()
	e := s.expect()
	for i, m := range e.models {
		pickers := num(unstructuredField(s.obj, "spec", "inferenceExtension", "picker", "replicas"), 1)
		name := s.name() + "-" + m.name + "-pool"
		checkModelRoute(t, s, s.name()+"-"+m.name+"-httproute", "/"+m.name, name, i == 0)
		pool := get(t, xp.InferencePoolGVR, s.ns(), name)
		if pool == nil {
			t.Errorf("no InferencePool %s", name)
			continue
		}
		sel, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "selector", "matchLabels")
		want := map[string]string{labelInstance: s.name(), "app.kubernetes.io/name": m.name, labelComponent: "serving-engine"}
		if !maps.Equal(sel, want) {
			t.Errorf("InferencePool %s: selector %v, want %v", name, sel, want)
		}
		var selected, engines []string
		for _, p := range list(t, podGVR, s.ns(), labelsString(sel)) {
			selected = append(selected, p.GetName())
		}
		for _, p := range s.podsOf(t, "serving-engine", m.label) {
			engines = append(engines, p.GetName())
		}
		slices.Sort(selected)
		slices.Sort(engines)
		if !slices.Equal(selected, engines) || int64(len(selected)) != m.replicas {
			t.Errorf("InferencePool %s selects pods %v; the engine pods of %s are %v (want %d)", name, selected, m.name, engines, m.replicas)
		}
		if ok, seen := s.poolAcceptance(pool); !ok {
			t.Errorf("not accepted by the Gateway stand-in for %v: %s", s.gatewayParents(), seen)
		}

		epp := s.name() + "-" + m.name + "-epp"
		if ref := str(pool, "spec", "endpointPickerRef", "name"); ref != epp {
			t.Errorf("InferencePool %s: endpointPickerRef %q, want %q", name, ref, epp)
		}
		if get(t, serviceGVR, s.ns(), epp) == nil {
			t.Errorf("no Service %s (the pool's endpoint picker)", epp)
		}
		d := get(t, deploymentGVR, s.ns(), epp)
		if d == nil {
			t.Errorf("no Deployment %s", epp)
			continue
		}
		if deploymentCondition(d, "Available") != "True" || num(unstructuredField(d, "status", "readyReplicas"), 0) != pickers {
			t.Errorf("Deployment %s is not Available with %d ready replicas: %v", epp, pickers, d.Object["status"])
		}
		psel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		pods := list(t, podGVR, s.ns(), labelsString(psel))
		if int64(readyPods(pods)) != pickers || int64(len(pods)) != pickers {
			t.Errorf("Deployment %s: %d pods, %d Ready; want %d", epp, len(pods), readyPods(pods), pickers)
		}
		role, rb := get(t, roleGVR, s.ns(), epp), get(t, roleBindingGVR, s.ns(), epp)
		if role == nil || rb == nil {
			t.Errorf("picker %s: Role %v, RoleBinding %v", epp, role != nil, rb != nil)
			continue
		}
		if rbAt, roleAt := rb.GetCreationTimestamp(), role.GetCreationTimestamp(); rbAt.Before(&roleAt) {
			t.Errorf("RoleBinding %s created at %v, before its Role (%v)", epp, rbAt, roleAt)
		}
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		if str(rb, "roleRef", "name") != epp || len(subjects) != 1 || subjects[0].(map[string]any)["name"] != epp {
			t.Errorf("RoleBinding %s binds %s to %v, want Role %s to ServiceAccount %s", epp, str(rb, "roleRef", "name"), subjects, epp, epp)
		}
	}
	checkObjectives(t, s)
	s.checkNoRBACErrors(t)
}

// checkModelRoute: a model's HTTPRoute sends its path, and / when it holds
// the gateway's root, to its pool and nothing else.
func checkModelRoute(t *testing.T, s *testStack, name, path, pool string, holder bool) {
	t.Helper()
	route := get(t, xp.HTTPRouteGVR, s.ns(), name)
	if route == nil {
		t.Errorf("no HTTPRoute %s", name)
		return
	}
	want := []string{path + " inference.networking.k8s.io/InferencePool/" + pool}
	if holder {
		want = append(want, "/ inference.networking.k8s.io/InferencePool/"+pool)
	}
	var got []string
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	for _, r := range rules {
		value, _, _ := unstructured.NestedSlice(r.(map[string]any), "matches")
		p := ""
		if len(value) == 1 {
			p, _, _ = unstructured.NestedString(value[0].(map[string]any), "path", "value")
		}
		bs, _, _ := unstructured.NestedSlice(r.(map[string]any), "backendRefs")
		for _, b := range bs {
			m, _ := b.(map[string]any)
			got = append(got, fmt.Sprintf("%s %v/%v/%v", p, m["group"], m["kind"], m["name"]))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("HTTPRoute %s: rules %v, want %v", name, got, want)
	}
}

// llmdObjectiveGVR are the InferenceObjectives llm-d's picker v0.9.0 on
// (the stacks' default) watches.
var llmdObjectiveGVR = schema.GroupVersionResource{Group: "llm-d.ai", Version: "v1alpha2", Resource: "inferenceobjectives"}

// checkObjectives: each of a model's inferenceObjectives is the
// InferenceObjective S-M-<name> of its pool with its priority, and
// status.models[] names the header that selects it.
func checkObjectives(t *testing.T, s *testStack) {
	t.Helper()
	models, _, _ := unstructured.NestedSlice(s.obj.Object, "spec", "models")
	xr := s.xr(t)
	status, _, _ := unstructured.NestedSlice(xr.Object, "status", "models")
	for i, m := range models {
		mm, _ := m.(map[string]any)
		objs, _ := mm["inferenceObjectives"].([]any)
		var headers []string
		if i < len(status) {
			sos, _ := status[i].(map[string]any)["inferenceObjectives"].([]any)
			for _, so := range sos {
				h, _ := so.(map[string]any)["header"].(string)
				headers = append(headers, h)
			}
		}
		if len(headers) != len(objs) {
			t.Errorf("status.models[%d].inferenceObjectives has %d headers %v, want %d", i, len(headers), headers, len(objs))
		}
		for _, o := range objs {
			om, _ := o.(map[string]any)
			name := fmt.Sprintf("%s-%s-%s", s.name(), mm["name"], om["name"])
			u := get(t, llmdObjectiveGVR, s.ns(), name)
			if u == nil {
				t.Errorf("no InferenceObjective %s", name)
				continue
			}
			if pool := str(u, "spec", "poolRef", "name"); pool != fmt.Sprintf("%s-%s-pool", s.name(), mm["name"]) || num(unstructuredField(u, "spec", "priority"), 0) != num(om["priority"], 1) {
				t.Errorf("InferenceObjective %s: poolRef %s, priority %v; want the model's pool and %v", name, pool, unstructuredField(u, "spec", "priority"), om["priority"])
			}
			if !slices.Contains(headers, "x-llm-d-inference-objective: "+name) {
				t.Errorf("status.models[%d].inferenceObjectives headers %v lack x-llm-d-inference-objective: %s", i, headers, name)
			}
		}
	}
}

func unstructuredField(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

// testNotAccepted: a stack on the inference extension whose Gateway does
// not accept its pool is not Ready, and says why: one model of
// example/stacks/inference-extension.yaml, its engines and picker running,
// first with no Gateway taking up its route (the pool's status names no
// parent), then with a Gateway that accepts the pool but cannot resolve its
// endpoint picker (ResolvedRefs False, InvalidExtensionRef). Each time,
// within a few TTLs and then for three, RouterReady is False with reason
// NotAccepted and a message naming the pool (and the Gateway and condition),
// Ready is False, EnginesReady True. Accepted at last, the stack is Ready,
// while a pool of the namespace that no route references stays without
// parents: the Gateway stand-in accepts only what a route names.
func testNotAccepted(t *testing.T) {
	obj := readObject(t, "../../example/stacks/inference-extension.yaml")
	obj.SetNamespace(namespace(t, "gateway-not-accepted"))
	spec := obj.Object["spec"].(map[string]any)
	models := spec["models"].([]any)
	spec["models"] = []any{models[len(models)-1]} // qwen: no model cache
	provide(t, obj)
	gw.Serve(obj.GetNamespace(), xp.GatewayIgnores)
	s := applyStack(t, obj, false)
	model := s.expect().models[0].name
	pool := s.name() + "-" + model + "-pool"
	gateway := s.gatewayParents()[0]["name"].(string)

	notAccepted := func(parts ...string) func() (bool, string) {
		return func() (bool, string) {
			xr := s.xr(t)
			if xr == nil {
				return false, "no XR"
			}
			var bad []string
			c := condition(xr, "RouterReady")
			if c.Status != "False" || c.Reason != "NotAccepted" || !strings.Contains(c.Message, "InferencePool "+pool+" ") {
				bad = append(bad, fmt.Sprintf("RouterReady %s %s: %q, want False NotAccepted naming InferencePool %s", c.Status, c.Reason, c.Message, pool))
			}
			for _, p := range parts {
				if !strings.Contains(c.Message, p) {
					bad = append(bad, fmt.Sprintf("RouterReady's message %q lacks %q", c.Message, p))
				}
			}
			if c := condition(xr, "Ready"); c.Status != "False" {
				bad = append(bad, "Ready "+c.Status)
			}
			for _, typ := range []string{"Synced", "EnginesReady"} {
				if c := condition(xr, typ); c.Status != "True" {
					bad = append(bad, fmt.Sprintf("%s %s %s: %s", typ, c.Status, c.Reason, c.Message))
				}
			}
			// The picker runs: only the pool's acceptance is missing.
			if d := get(t, deploymentGVR, s.ns(), s.name()+"-"+model+"-epp"); d == nil || deploymentCondition(d, "Available") != "True" {
				bad = append(bad, "picker Deployment not Available")
			}
			return len(bad) == 0, strings.Join(bad, "; ")
		}
	}
	step := func(what string, check func() (bool, string)) {
		t.Helper()
		start := time.Now()
		eventually(t, 4*time.Minute, s.String()+" "+what, check)
		stable(t, 3*e2eTTL, 6*e2eTTL, s.String()+" "+what, check)
		t.Logf("%s %s (%s); RouterReady: %s", s, what, time.Since(start).Round(100*time.Millisecond), condition(s.xr(t), "RouterReady").Message)
	}

	step("not Ready: no Gateway took up its route", notAccepted("no Gateway has accepted InferencePool "+pool+" yet"))

	gw.Serve(s.ns(), xp.GatewayUnresolved)
	step("not Ready: its Gateway cannot resolve the picker", notAccepted(
		"InferencePool "+pool+" is not accepted", "Gateway "+gateway+": ResolvedRefs False: InvalidExtensionRef"))

	// A pool no route references, next to the stack's, with the same
	// picker: the Gateway must leave it alone.
	stray := object("inference.networking.k8s.io/v1", "InferencePool", s.ns(), "stray-pool", map[string]any{"spec": map[string]any{
		"selector":          map[string]any{"matchLabels": map[string]any{labelInstance: s.name()}},
		"targetPorts":       []any{map[string]any{"number": int64(8000)}},
		"endpointPickerRef": map[string]any{"name": s.name() + "-" + model + "-epp", "port": map[string]any{"number": int64(9002)}},
	}})
	apply(t, stray)
	t.Cleanup(func() { deleteAndWait(t, stray, time.Minute) })

	gw.Serve(s.ns(), xp.GatewayAccepts)
	start := time.Now()
	s.waitReady(t, s.expect(), 3*time.Minute)
	t.Logf("%s Ready %s after its Gateway accepted the pool", s, time.Since(start).Round(100*time.Millisecond))
	if ok, seen := s.poolAcceptance(get(t, xp.InferencePoolGVR, s.ns(), pool)); !ok {
		t.Error(seen)
	}
	if u := get(t, xp.InferencePoolGVR, s.ns(), "stray-pool"); u == nil {
		t.Error("InferencePool stray-pool is gone")
	} else if parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents"); len(parents) != 0 {
		t.Errorf("InferencePool stray-pool, which no route references, has status.parents %v", parents)
	}
}
