//go:build e2e_crossplane

package crossplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/kubelet"
	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

var (
	hpaGVR = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	smGVR  = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
)

// seed is the seed manifest as an XR (example/xr.yaml) or, with the legacy
// XRD, as a claim (example/claim.yaml), in namespace ns (made, with what it
// references) and changed by edit.
func seed(t *testing.T, ns string, legacy bool, edit func(spec map[string]any)) *unstructured.Unstructured {
	t.Helper()
	path := "../../example/xr.yaml"
	if legacy {
		path = "../../example/claim.yaml"
	}
	o := readObject(t, path)
	o.SetNamespace(namespace(t, ns))
	if edit != nil {
		edit(o.Object["spec"].(map[string]any))
	}
	provide(t, o)
	return o
}

// noStorage turns the model cache off (a stack that needs no volume).
func noStorage(spec map[string]any) { spec["storage"] = map[string]any{"enabled": false} }

func nsFor(name string, legacy bool) string {
	if legacy {
		return name + "-claim"
	}
	return name
}

// A podReason is a pod-level reason a stack's engine does not serve: the
// change to the seed that causes it, how the engine pod shows it, and the
// reason and the pod line the function's EnginesReady gives (status/pods.go).
type podReason struct {
	name   string
	reason string
	edit   func(spec map[string]any)
	// shows reports whether the pod shows the state, and the pod line of
	// the function's message for it.
	shows func(p *corev1.Pod) (bool, string)
}

var podReasons = []podReason{{
	name: "Unschedulable", reason: "Unschedulable",
	edit: func(spec map[string]any) {
		spec["resources"].(map[string]any)["gpu"] = fmt.Sprint(nodeGPUs + 1)
	},
	shows: func(p *corev1.Pod) (bool, string) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, "unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu"
			}
		}
		return false, ""
	},
}, {
	name: "ImagePullError", reason: "ImagePullError",
	edit: func(spec map[string]any) {
		spec["pod"] = map[string]any{"annotations": map[string]any{kubelet.Annotation: kubelet.ImagePullBackOff}}
	},
	shows: func(p *corev1.Pod) (bool, string) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "vllm" && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ImagePullBackOff" {
				return true, fmt.Sprintf("container vllm cannot pull image %s: ImagePullBackOff: Back-off pulling image %q", cs.Image, cs.Image)
			}
		}
		return false, ""
	},
}, {
	name: "Starting", reason: "Starting",
	edit: func(spec map[string]any) {
		spec["pod"] = map[string]any{"annotations": map[string]any{kubelet.Annotation: kubelet.Starting}}
	},
	shows: func(p *corev1.Pod) (bool, string) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "vllm" && cs.State.Running != nil && cs.Started != nil && !*cs.Started {
				return true, "container vllm has not passed its startup probe yet (downloading or loading the model)"
			}
		}
		return false, ""
	},
}}

// testPodReasons: a stack whose engine cannot be scheduled (more GPUs than
// the node has), one whose image cannot be pulled, one whose engine has not
// passed its startup probe. Within a few TTLs of the pod showing it (pods
// are not composed resources: Crossplane calls the function again every
// TTL, and the function reads them), EnginesReady is False with the
// function's reason and a message naming the model and the pod, on the XR
// and the claim; Ready is False, the router and storage are fine,
// status.readyModels is 0/1; and that holds for two TTLs.
func testPodReasons(t *testing.T, legacy bool) {
	for _, pr := range podReasons {
		t.Run(pr.name, func(t *testing.T) {
			t.Parallel()
			obj := seed(t, nsFor("reason-"+strings.ToLower(pr.name), legacy), legacy, func(spec map[string]any) {
				noStorage(spec)
				pr.edit(spec)
			})
			s := applyStack(t, obj, legacy)
			model := s.expect().models[0].name

			var pod, line string
			var since time.Time
			eventually(t, 3*time.Minute, "the engine pod showing "+pr.name, func() (bool, string) {
				pods := s.podsOf(t, "serving-engine", "")
				if len(pods) != 1 {
					return false, fmt.Sprintf("%d engine pods", len(pods))
				}
				p := &corev1.Pod{}
				if err := fromUnstructured(&pods[0], p); err != nil {
					t.Fatal(err)
				}
				var ok bool
				ok, line = pr.shows(p)
				pod = p.Name
				return ok, fmt.Sprintf("pod %s: %v", p.Name, p.Status)
			})
			since = time.Now()

			want := fmt.Sprintf("0/1 models ready. %s: 0/1 replicas available", model)
			wantPod := "pod " + pod + ": " + line
			state := func() (bool, string) {
				xr := s.xr(t)
				if xr == nil {
					return false, "no XR"
				}
				var bad []string
				objs := map[string]*unstructured.Unstructured{"XR": xr}
				if legacy {
					objs["claim"] = s.claim(t)
				}
				for what, o := range objs {
					c := condition(o, "EnginesReady")
					if c.Status != "False" || c.Reason != pr.reason || !strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, wantPod) {
						bad = append(bad, fmt.Sprintf("%s EnginesReady %s %s: %q, want False %s: %q ... %q", what, c.Status, c.Reason, c.Message, pr.reason, want, wantPod))
					}
					if c := condition(o, "Ready"); c.Status != "False" {
						bad = append(bad, fmt.Sprintf("%s Ready %s", what, c.Status))
					}
					for _, typ := range []string{"Synced", "RouterReady", "StorageReady"} {
						if c := condition(o, typ); c.Status != "True" {
							bad = append(bad, fmt.Sprintf("%s %s %s %s: %s", what, typ, c.Status, c.Reason, c.Message))
						}
					}
				}
				if got := str(xr, "status", "readyModels"); got != "0/1" {
					bad = append(bad, fmt.Sprintf("status.readyModels %q", got))
				}
				return len(bad) == 0, strings.Join(bad, "; ")
			}
			eventually(t, 8*e2eTTL, fmt.Sprintf("%s showing %s", s, pr.reason), state)
			t.Logf("%s shows %s %s after the pod did", s, pr.reason, time.Since(since).Round(100*time.Millisecond))
			stable(t, 2*e2eTTL, 4*e2eTTL, fmt.Sprintf("%s showing %s", s, pr.reason), state)
			c := condition(s.xr(t), "EnginesReady")
			t.Logf("EnginesReady %s %s: %s", c.Status, c.Reason, c.Message)
		})
	}
}

// refusal checks what a refused stack shows: Synced False on the XR with the
// function's message, EnginesReady, RouterReady and StorageReady False with
// reason Refused and that message on the XR (and the claim), a Warning
// event with it on the XR (and the claim), Ready and status.readyModels
// still what they were (the stack that runs is the last one accepted).
// errPart is a part of the function's message; the whole message is read
// from the XR's Synced condition.
func refusal(t *testing.T, s *testStack, errPart, readyModels string) (bool, string) {
	t.Helper()
	xr := s.xr(t)
	if xr == nil {
		return false, "no XR"
	}
	synced := condition(xr, "Synced")
	const fatal = "returned a fatal result: "
	i := strings.Index(synced.Message, fatal)
	if synced.Status != "False" || i < 0 || !strings.Contains(synced.Message, errPart) {
		return false, fmt.Sprintf("XR Synced %s %s: %s", synced.Status, synced.Reason, synced.Message)
	}
	msg := synced.Message[i+len(fatal):]
	var bad []string
	objs := []*unstructured.Unstructured{xr}
	if s.legacy {
		objs = append(objs, s.claim(t))
	}
	for _, o := range objs {
		what := o.GetKind() + " " + o.GetName()
		for _, typ := range stackConditions {
			if c := condition(o, typ); c.Status != "False" || c.Reason != "Refused" || c.Message != refusedPrefix+msg {
				bad = append(bad, fmt.Sprintf("%s %s %s %s: %q", what, typ, c.Status, c.Reason, c.Message))
			}
		}
		if c := condition(o, "Ready"); c.Status != "True" {
			bad = append(bad, fmt.Sprintf("%s Ready %s (was True)", what, c.Status))
		}
		// The function's warning result: Crossplane prefixes the XR's copy
		// with the pipeline step.
		want := msg
		if o == xr {
			want = fmt.Sprintf("Pipeline step %q: %s", pipelineStep, msg)
		}
		evs := eventsOf(t, o)
		if !slices.ContainsFunc(evs, func(e corev1.Event) bool {
			return e.Type == corev1.EventTypeWarning && e.Message == want
		}) {
			bad = append(bad, fmt.Sprintf("%s: no Warning event %q; events %s", what, want, formatEvents(evs)))
		}
	}
	if got := str(xr, "status", "readyModels"); got != readyModels {
		bad = append(bad, fmt.Sprintf("status.readyModels %q, was %q", got, readyModels))
	}
	return len(bad) == 0, strings.Join(bad, "; ")
}

// logRefusal logs what a refused stack shows, for the record.
func logRefusal(t *testing.T, s *testStack) {
	t.Helper()
	objs := []*unstructured.Unstructured{s.xr(t)}
	if s.legacy {
		objs = append(objs, s.claim(t))
	}
	for _, o := range objs {
		var warnings []corev1.Event
		for _, e := range eventsOf(t, o) {
			if e.Type == corev1.EventTypeWarning {
				warnings = append(warnings, e)
			}
		}
		t.Logf("%s %s: conditions %s; Warning events %s", o.GetKind(), o.GetName(), xp.Conditions(o), formatEvents(warnings))
	}
}

// testRefused: a Ready stack changed into one the function refuses (an
// extra argument --port, which would move vLLM off its probes' port). Then
// every composed object keeps its resourceVersion, the XR and the claim show
// the refusal (refusal) for three TTLs; fixing the spec makes it Ready
// again, with the same objects.
func testRefused(t *testing.T, legacy bool) {
	s := applyStack(t, seed(t, nsFor("refused", legacy), legacy, nil), legacy)
	s.waitReady(t, s.expect(), 5*time.Minute)
	accepted := s.obj.DeepCopy()
	before := s.snapshot(t)

	var errPart string
	s.edit(t, func(spec map[string]any) {
		vc := spec["vllmConfig"].(map[string]any)
		args, _ := vc["extraArgs"].([]any)
		errPart = fmt.Sprintf(`spec.vllmConfig.extraArgs[%d] "--port=9000" is refused`, len(args))
		vc["extraArgs"] = append(args, "--port=9000")
	})
	refusedUntilFixed(t, s, before, accepted, errPart, "the fix (the spec accepted before)", nil)
}

// refusedUntilFixed: a Ready stack was just edited into one the function
// refuses with msg. The XR and the claim show the refusal (refusal), and,
// for three TTLs, every composed object keeps its resourceVersion and
// extra (if any) holds; then the accepted spec goes back and the stack is
// Ready again with the same objects (fix names that step in a failure).
func refusedUntilFixed(t *testing.T, s *testStack, before map[objRef]string, accepted *unstructured.Unstructured, msg, fix string, extra func() (bool, string)) {
	t.Helper()
	check := func() (bool, string) {
		if ok, seen := refusal(t, s, msg, "1/1"); !ok {
			return false, seen
		}
		if extra != nil {
			if ok, seen := extra(); !ok {
				return false, seen
			}
		}
		return s.unchanged(t, before)
	}
	eventually(t, 6*e2eTTL, s.String()+" refused", func() (bool, string) { return refusal(t, s, msg, "1/1") })
	stable(t, 3*e2eTTL, 6*e2eTTL, s.String()+" refused, its objects unchanged", check)
	logRefusal(t, s)

	s.apply(t, accepted)
	s.waitReady(t, s.expect(), 3*time.Minute)
	if ok, diff := s.unchanged(t, before); !ok {
		t.Errorf("after %s: %s", fix, diff)
	}
}

// serviceMonitorCRD is the CRD of the Prometheus Operator's ServiceMonitor.
const serviceMonitorCRD = "servicemonitors.monitoring.coreos.com"

// testMissingCRD: a Ready stack given monitoring.serviceMonitor while the
// ServiceMonitor CRD is not installed is refused with the function's message
// (fn/crds.go), composes nothing for it and keeps every object as it was;
// turning the option off makes it Synced and Ready again with the same
// objects; once the CRD is installed (the pinned upstream CRD, generated by
// hack/e2e-crossplane.sh as e2e/upstream_test.go does), turning it on
// composes the ServiceMonitors and the stack is Ready. Then the
// observability example, refused until the PrometheusRule CRD is installed
// too (checkObservabilityExample).
func testMissingCRD(t *testing.T) {
	if get(t, crdGVR, "", serviceMonitorCRD) != nil {
		t.Fatalf("the CRD %s is already installed", serviceMonitorCRD)
	}
	s := applyStack(t, seed(t, "missing-crd", false, nil), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	accepted := s.obj.DeepCopy()
	before := s.snapshot(t)

	monitoring := func(spec map[string]any) {
		spec["monitoring"] = map[string]any{"serviceMonitor": map[string]any{"interval": "30s"}}
	}
	s.edit(t, monitoring)
	const msg = "cannot compose the stack: monitoring.serviceMonitor needs the ServiceMonitor CRD " + serviceMonitorCRD +
		", which the cluster does not have: install the Prometheus Operator, or turn monitoring.serviceMonitor off"
	noServiceMonitor := func() (bool, string) {
		for _, r := range s.refs(s.xr(t)) {
			if r.Kind == "ServiceMonitor" {
				return false, "composed " + r.String()
			}
		}
		return true, ""
	}
	// The option off again: the stack recovers, untouched.
	refusedUntilFixed(t, s, before, accepted, msg, "turning monitoring.serviceMonitor off", noServiceMonitor)

	// The CRD installed, the option on.
	installMonitoringCRD(t, serviceMonitorCRD)
	s.edit(t, monitoring)
	eventually(t, 6*e2eTTL, s.String()+" composing ServiceMonitors", func() (bool, string) {
		var sms []string
		for _, r := range s.refs(s.xr(t)) {
			if r.Kind == "ServiceMonitor" && getRef(t, r) != nil {
				sms = append(sms, r.Name)
			}
		}
		return len(sms) > 0, fmt.Sprintf("ServiceMonitors %v; XR %s", sms, xp.Conditions(s.xr(t)))
	})
	s.waitReady(t, s.expect(), 3*time.Minute)
	var names []string
	for _, u := range list(t, smGVR, s.ns(), labelInstance+"="+s.name()) {
		names = append(names, u.GetName())
	}
	t.Logf("ServiceMonitors composed: %v", names)

	checkObservabilityExample(t)
}

// prometheusRuleCRD is the CRD of the Prometheus Operator's PrometheusRule.
const prometheusRuleCRD = "prometheusrules.monitoring.coreos.com"

// checkObservabilityExample: example/stacks/observability.yaml, which the
// examples leave out (it needs the Prometheus Operator's CRDs), in a
// namespace of its own once testMissingCRD has installed the
// ServiceMonitor CRD: refused while the PrometheusRule CRD is missing (its
// XR Synced False with the function's message, read from the condition: a
// refusal's events are tested on fresh XRs, as the event recorder drops an
// old XR's new events), then, once that CRD is installed, Ready as every
// example is, with its Grafana dashboard ConfigMap (labelled for Grafana's
// sidecar) and its PrometheusRule composed.
func checkObservabilityExample(t *testing.T) {
	t.Helper()
	obj := readObject(t, "../../example/stacks/observability.yaml")
	obj.SetNamespace(namespace(t, "ex-observability"))
	provide(t, obj)
	s := applyStack(t, obj, false)
	const msg = "cannot compose the stack: monitoring.alerts needs the PrometheusRule CRD " + prometheusRuleCRD +
		", which the cluster does not have: install the Prometheus Operator, or turn monitoring.alerts off"
	eventually(t, 6*e2eTTL, s.String()+" refused without the PrometheusRule CRD", func() (bool, string) {
		synced := condition(s.xr(t), "Synced")
		return synced.Status == "False" && strings.HasSuffix(synced.Message, "returned a fatal result: "+msg), fmt.Sprintf("Synced %s: %s", synced.Status, synced.Message)
	})
	installMonitoringCRD(t, prometheusRuleCRD)
	s.waitReady(t, s.expect(), 6*time.Minute)
	var dashboards, rules []string
	for _, r := range s.refs(s.xr(t)) {
		u := getRef(t, r)
		switch {
		case u == nil:
		case r.Kind == "ConfigMap" && u.GetLabels()["grafana_dashboard"] == "1":
			dashboards = append(dashboards, r.Name)
		case r.Kind == "PrometheusRule":
			rules = append(rules, r.Name)
		}
	}
	if len(dashboards) != 1 || len(rules) != 1 {
		t.Errorf("%s composed dashboards %v and PrometheusRules %v, want one of each", s, dashboards, rules)
	}
	s.logStatus(t)
}

// installMonitoringCRD installs the pinned upstream CRD name (the
// ServiceMonitor's or the PrometheusRule's) from what hack/e2e-crossplane.sh
// generated (E2E_MONITORING_CRDS: controller-gen's output for the
// Prometheus Operator's monitoring/v1 types) and waits until it is
// Established.
func installMonitoringCRD(t *testing.T, name string) {
	t.Helper()
	path := os.Getenv("E2E_MONITORING_CRDS")
	if path == "" {
		t.Fatal("E2E_MONITORING_CRDS is not set: run the suite with hack/e2e-crossplane.sh")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := xp.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var crd *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && o.GetName() == name {
			crd = o
		}
	}
	if crd == nil {
		t.Fatalf("%s has no CRD %s", path, name)
	}
	apply(t, crd)
	eventually(t, time.Minute, "CRD "+name+" Established", func() (bool, string) {
		u := get(t, crdGVR, "", name)
		return xp.Condition(u, "Established") == "True", xp.Conditions(u)
	})
}

// testRBAC: a new stack never meets an RBAC refusal. Kubernetes refuses a
// RoleBinding to a Role it cannot find from Crossplane (which may not bind
// arbitrary Roles), so the function composes the RoleBinding only once it
// observes the Role: over the stack's whole life (events are kept an hour)
// no event on the XR and no line of Crossplane's log about its RoleBinding
// says forbidden, and the RoleBinding, created no earlier than the Role,
// binds the Role to the router's ServiceAccount.
func testRBAC(t *testing.T) {
	s := applyStack(t, seed(t, "rbac", false, noStorage), false)
	s.waitReady(t, s.expect(), 5*time.Minute)
	s.checkNoRBACErrors(t)
	ref := func(kind, name string) objRef {
		api := "rbac.authorization.k8s.io/v1"
		if kind == "ServiceAccount" {
			api = "v1"
		}
		return objRef{APIVersion: api, Kind: kind, Namespace: s.ns(), Name: name}
	}
	role := getRef(t, ref("Role", s.name()+"-reader"))
	rb := getRef(t, ref("RoleBinding", s.name()+"-deployment-access-binding"))
	if role == nil || rb == nil {
		t.Fatalf("Role %v, RoleBinding %v", role != nil, rb != nil)
	}
	if rbAt, roleAt := rb.GetCreationTimestamp(), role.GetCreationTimestamp(); rbAt.Before(&roleAt) {
		t.Errorf("RoleBinding created at %v, before its Role (%v)", rb.GetCreationTimestamp(), role.GetCreationTimestamp())
	}
	if got := str(rb, "roleRef", "name"); got != role.GetName() {
		t.Errorf("RoleBinding binds %q, want %q", got, role.GetName())
	}
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != s.name()+"-router-service-account" {
		t.Errorf("RoleBinding subjects %v, want the router's ServiceAccount", subjects)
	}
}

// testHPA: a model autoscaled by a HorizontalPodAutoscaler (minReplicas 2)
// while the manifest says replicas 1: the HPA scales the Deployment to 2,
// the stack is Ready with 2/2 replicas, and the count stays 2 (the same
// Deployment generation) for four TTLs while Crossplane keeps calling the
// function: the function does not send replicas for an autoscaled model, so
// no field manager but the HPA's (the scale subresource) owns it.
func testHPA(t *testing.T) {
	s := applyStack(t, seed(t, "hpa", false, func(spec map[string]any) {
		noStorage(spec)
		spec["autoscaling"] = map[string]any{"type": "hpa", "minReplicas": int64(2), "maxReplicas": int64(3)}
	}), false)
	e := s.expect()
	if e.models[0].replicas != 1 {
		t.Fatalf("the seed asks for %d replicas, want 1", e.models[0].replicas)
	}
	e.models[0].replicas = 2 // the HPA's minReplicas
	s.waitReady(t, e, 5*time.Minute)

	engine := s.name() + "-llama-3-2-1b-instruct-deployment-vllm"
	hpa := get(t, hpaGVR, s.ns(), s.name()+"-llama-3-2-1b-instruct-hpa")
	if hpa == nil {
		t.Fatalf("no HorizontalPodAutoscaler %s-llama-3-2-1b-instruct-hpa", s.name())
	}
	// The HPA controller did it (its reason: below minReplicas).
	eventually(t, time.Minute, "the HPA's rescale event", func() (bool, string) {
		evs := eventsOf(t, hpa)
		return slices.ContainsFunc(evs, func(e corev1.Event) bool {
			return e.Reason == "SuccessfulRescale" && strings.Contains(e.Message, "New size: 2")
		}), formatEvents(evs)
	})
	d := get(t, deploymentGVR, s.ns(), engine)
	gen := d.GetGeneration()
	calls := functionCalls(t)
	stable(t, 4*e2eTTL, 6*e2eTTL, "Deployment "+engine+" at the HPA's 2 replicas", func() (bool, string) {
		d := get(t, deploymentGVR, s.ns(), engine)
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if r != 2 || d.GetGeneration() != gen {
			return false, fmt.Sprintf("spec.replicas %d, generation %d (was %d)", r, d.GetGeneration(), gen)
		}
		return s.readyState(t, e)
	})
	if got := functionCalls(t); got <= calls {
		t.Errorf("the function was not called while the HPA's count held (%v calls, was %v)", got, calls)
	}
	d = get(t, deploymentGVR, s.ns(), engine)
	var owners []string
	for _, mf := range d.GetManagedFields() {
		if mf.FieldsV1 != nil && specReplicasOwned(mf.FieldsV1.Raw) {
			owners = append(owners, fmt.Sprintf("%s (%s %s)", mf.Manager, mf.Operation, mf.Subresource))
			if mf.Subresource != "scale" {
				t.Errorf("Deployment %s: field manager %q (%s) owns spec.replicas", engine, mf.Manager, mf.Operation)
			}
		}
	}
	t.Logf("Deployment %s: spec.replicas 2, owned by field managers %v (none but the scale subresource's may)", engine, owners)
}

// functionDownStack applies FunctionDown's stack (the seed, in namespace
// function-down), to become Ready while the other scenarios run.
func functionDownStack(t *testing.T) *testStack {
	t.Helper()
	return applyStack(t, seed(t, "function-down", false, noStorage), false)
}

// testFunctionDown: with a Ready stack, the function process stops for a
// minute (as when its pod goes away), and the stack is changed (2 replicas)
// right after. Crossplane applies nothing without the function's answer:
// every composed object keeps its resourceVersion all minute. (Crossplane
// v2.3.4 calls functions with gRPC's waitForReady, so the reconcile the
// change starts waits for the function, up to its 2-minute reconcile
// timeout, and the XR keeps Synced=True meanwhile.) Then the function starts
// again, the change waiting since is applied, and the stack is Ready with it.
func testFunctionDown(t *testing.T, s *testStack) {
	s.waitReady(t, s.expect(), 5*time.Minute)
	before := s.snapshot(t)
	if err := fn.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	started := false
	defer func() {
		if !started { // the other tests need it
			if err := fn.Start(context.Background()); err != nil {
				t.Errorf("cannot start the function again: %v", err)
			}
		}
	}()
	s.edit(t, func(spec map[string]any) { spec["replicas"] = int64(2) })
	t.Logf("function stopped and %s changed to 2 replicas; it keeps its objects for a minute", s)
	for time.Since(stopped) < time.Minute {
		if ok, diff := s.unchanged(t, before); !ok {
			t.Fatalf("%s after the function stopped: %s", time.Since(stopped).Round(time.Second), diff)
		}
		time.Sleep(time.Second)
	}
	t.Logf("after a minute without the function: XR %s", xp.Conditions(s.xr(t)))

	if err := fn.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	started = true
	restarted := time.Now()
	engine := s.name() + "-llama-3-2-1b-instruct-deployment-vllm"
	eventually(t, 3*time.Minute, "the waiting change applied after the function's restart", func() (bool, string) {
		d := get(t, deploymentGVR, s.ns(), engine)
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return r == 2, fmt.Sprintf("spec.replicas %d; XR %s", r, xp.Conditions(s.xr(t)))
	})
	t.Logf("the change was applied %s after the function started again", time.Since(restarted).Round(100*time.Millisecond))
	s.waitReady(t, s.expect(), 3*time.Minute)
}

// pipelineStep is the function's step in composition/*.yaml.
const pipelineStep = "render-vllm-stack"

// specReplicasOwned reports whether a managedFields entry (FieldsV1) owns
// spec.replicas.
func specReplicasOwned(raw []byte) bool {
	var m map[string]map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return false
	}
	_, ok := m["f:spec"]["f:replicas"]
	return ok
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
