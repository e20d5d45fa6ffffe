package fn

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The objects of minimalXR: stack "s", model "m", namespace "llm".

// observedReady is every composed object of minimalXR as observed once the
// stack serves. Tests change or delete one object at a time.
func observedReady() map[string]map[string]any {
	return map[string]map[string]any{
		"engine-m":              observedDeployment("s-m-deployment-vllm", 1),
		"engine-m-service":      observedObject("v1", "Service", "s-m-engine-service"),
		"engine-m-storage":      observedClaim("s-m-storage-claim", "Bound"),
		"router-serviceaccount": observedObject("v1", "ServiceAccount", "s-router-service-account"),
		"router-role":           observedObject("rbac.authorization.k8s.io/v1", "Role", "s-reader"),
		"router-rolebinding":    observedObject("rbac.authorization.k8s.io/v1", "RoleBinding", "s-deployment-access-binding"),
		"router":                observedDeployment("s-deployment-router", 1),
		"router-service":        observedObject("v1", "Service", "s-router-service"),
	}
}

// observedDeployment is a Deployment of replicas that are all up to date and
// available, changed by each of change.
func observedDeployment(name string, replicas int32, change ...func(*appsv1.Deployment)) map[string]any {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "` + name + `-5d8f7b9c6d" has successfully progressed.`},
			},
		},
	}
	for _, c := range change {
		c(d)
	}
	return toMap(d)
}

// counts sets the replica counts of a Deployment's status.
func counts(updated, ready, available int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = updated, ready, available
		d.Status.UnavailableReplicas = *d.Spec.Replicas - available
	}
}

// condition sets (or adds) a condition of a Deployment's status.
func condition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		c := appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: message}
		for i := range d.Status.Conditions {
			if d.Status.Conditions[i].Type == t {
				d.Status.Conditions[i] = c
				return
			}
		}
		d.Status.Conditions = append(d.Status.Conditions, c)
	}
}

var unavailable = condition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")

func observedObject(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "llm"}}
}

// observedClaim is a PersistentVolumeClaim in phase; "" means no status yet.
func observedClaim(name, phase string) map[string]any {
	c := observedObject("v1", "PersistentVolumeClaim", name)
	if phase != "" {
		c["status"] = map[string]any{"phase": phase}
	}
	return c
}

func toMap(o runtime.Object) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		panic(err)
	}
	return m
}

// observedWith is observedReady with objects replaced; a nil object is
// deleted (not observed).
func observedWith(kv ...any) map[string]map[string]any {
	o := observedReady()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(o, kv[i].(string))
			continue
		}
		o[kv[i].(string)] = kv[i+1].(map[string]any)
	}
	return o
}

// cond is a condition of the response, as a person reads it.
type cond struct {
	Status  string
	Reason  string
	Message string
}

func conditionOfType(t *testing.T, rsp *fnv1.RunFunctionResponse, typ string) cond {
	t.Helper()
	for _, c := range rsp.GetConditions() {
		if c.GetType() == typ {
			if c.GetTarget() != fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
				t.Errorf("condition %s targets %s, want the XR and its claim", typ, c.GetTarget())
			}
			return cond{Status: c.GetStatus().String(), Reason: c.GetReason(), Message: c.GetMessage()}
		}
	}
	t.Fatalf("no condition %s in the response", typ)
	return cond{}
}

const (
	condTrue  = "STATUS_CONDITION_TRUE"
	condFalse = "STATUS_CONDITION_FALSE"
)

func readiness(t *testing.T, rsp *fnv1.RunFunctionResponse, key string) fnv1.Ready {
	t.Helper()
	r, ok := rsp.GetDesired().GetResources()[key]
	if !ok {
		t.Fatalf("no desired resource %q; have %v", key, keys(rsp))
	}
	return r.GetReady()
}

func xrStatus(rsp *fnv1.RunFunctionResponse) map[string]any {
	s, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	return s
}

// TestReadiness covers each readiness rule of SPEC §5 on the composed
// resource it applies to. Crossplane marks the XR Ready when all are ready.
func TestReadiness(t *testing.T) {
	deployment := func(change ...func(*appsv1.Deployment)) map[string]any {
		return observedDeployment("s-m-deployment-vllm", 1, change...)
	}
	generation := func(g, observed int64) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Generation, d.Status.ObservedGeneration = g, observed }
	}
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		key      string
		want     fnv1.Ready
	}{
		"DeploymentReady":                 {observed: observedReady(), key: "engine-m", want: fnv1.Ready_READY_TRUE},
		"DeploymentNotObserved":           {observed: observedWith("engine-m", nil), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentGenerationNotObserved": {observed: observedWith("engine-m", deployment(generation(2, 1))), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentNewerGenerationSeen":   {observed: observedWith("engine-m", deployment(generation(2, 3))), key: "engine-m", want: fnv1.Ready_READY_TRUE},
		"DeploymentNotUpdated":            {observed: observedWith("engine-m", deployment(counts(0, 1, 1))), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentNotAvailable":          {observed: observedWith("engine-m", deployment(counts(1, 1, 0))), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentNoneReady":             {observed: observedWith("engine-m", deployment(counts(1, 0, 0), unavailable)), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentAvailableFalse":        {observed: observedWith("engine-m", deployment(unavailable)), key: "engine-m", want: fnv1.Ready_READY_FALSE},
		"DeploymentAvailableMissing": {
			observed: observedWith("engine-m", deployment(func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			key:      "engine-m", want: fnv1.Ready_READY_FALSE,
		},
		"DeploymentScaledToZero": {
			xr:       with("replicas", 0),
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 0, func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			key:      "engine-m", want: fnv1.Ready_READY_TRUE,
		},
		"DeploymentScaledToZeroNotObserved": {
			xr:       with("replicas", 0),
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 0, generation(2, 1))),
			key:      "engine-m", want: fnv1.Ready_READY_FALSE,
		},
		"RouterReady":           {observed: observedReady(), key: "router", want: fnv1.Ready_READY_TRUE},
		"RouterNotAvailable":    {observed: observedWith("router", observedDeployment("s-deployment-router", 1, counts(1, 0, 0), unavailable)), key: "router", want: fnv1.Ready_READY_FALSE},
		"ClaimBound":            {observed: observedReady(), key: "engine-m-storage", want: fnv1.Ready_READY_TRUE},
		"ClaimPending":          {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "Pending")), key: "engine-m-storage", want: fnv1.Ready_READY_FALSE},
		"ClaimLost":             {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "Lost")), key: "engine-m-storage", want: fnv1.Ready_READY_FALSE},
		"ClaimWithoutStatus":    {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "")), key: "engine-m-storage", want: fnv1.Ready_READY_FALSE},
		"ClaimNotObserved":      {observed: observedWith("engine-m-storage", nil), key: "engine-m-storage", want: fnv1.Ready_READY_FALSE},
		"ServiceExists":         {observed: observedReady(), key: "engine-m-service", want: fnv1.Ready_READY_TRUE},
		"ServiceNotObserved":    {observed: observedWith("engine-m-service", nil), key: "engine-m-service", want: fnv1.Ready_READY_FALSE},
		"RouterServiceExists":   {observed: observedReady(), key: "router-service", want: fnv1.Ready_READY_TRUE},
		"RouterServiceMissing":  {observed: observedWith("router-service", nil), key: "router-service", want: fnv1.Ready_READY_FALSE},
		"ServiceAccountExists":  {observed: observedReady(), key: "router-serviceaccount", want: fnv1.Ready_READY_TRUE},
		"ServiceAccountMissing": {observed: observedWith("router-serviceaccount", nil), key: "router-serviceaccount", want: fnv1.Ready_READY_FALSE},
		"RoleExists":            {observed: observedReady(), key: "router-role", want: fnv1.Ready_READY_TRUE},
		"RoleMissing":           {observed: observedWith("router-role", nil), key: "router-role", want: fnv1.Ready_READY_FALSE},
		"RoleBindingExists":     {observed: observedReady(), key: "router-rolebinding", want: fnv1.Ready_READY_TRUE},
		"RoleBindingMissing":    {observed: observedWith("router-rolebinding", nil), key: "router-rolebinding", want: fnv1.Ready_READY_FALSE},
		"ChatTemplateExists": {
			xr:       with("model.chatTemplate", "{{ x }}"),
			observed: observedWith("engine-m-chat-template", observedObject("v1", "ConfigMap", "s-m-chat-templates")),
			key:      "engine-m-chat-template", want: fnv1.Ready_READY_TRUE,
		},
		"ChatTemplateMissing": {xr: with("model.chatTemplate", "{{ x }}"), observed: observedReady(), key: "engine-m-chat-template", want: fnv1.Ready_READY_FALSE},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr
			if xr == nil {
				xr = minimalXR()
			}
			rsp := mustRun(t, req(t, xr, nil, tc.observed))
			if got := readiness(t, rsp, tc.key); got != tc.want {
				t.Errorf("%s: ready = %s, want %s", tc.key, got, tc.want)
			}
		})
	}
}

// TestEverythingReady: with every object ready, every composed resource is
// ready (so the XR is) and every condition is True.
func TestEverythingReady(t *testing.T) {
	rsp := mustRun(t, req(t, minimalXR(), nil, observedReady()))
	for k := range rsp.GetDesired().GetResources() {
		if got := readiness(t, rsp, k); got != fnv1.Ready_READY_TRUE {
			t.Errorf("%s: ready = %s, want READY_TRUE", k, got)
		}
	}
	want := map[string]cond{
		conditionEnginesReady: {condTrue, "Available", "1/1 models ready"},
		conditionRouterReady:  {condTrue, "Available", "1/1 router replicas ready"},
		conditionStorageReady: {condTrue, "Bound", "1/1 model cache claims bound"},
	}
	for typ, w := range want {
		if diff := cmp.Diff(w, conditionOfType(t, rsp, typ)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", typ, diff)
		}
	}
	if n := len(rsp.GetConditions()); n != 3 {
		t.Errorf("got %d conditions, want EnginesReady, RouterReady and StorageReady only", n)
	}
}

// TestNothingObserved is the first reconcile: nothing exists yet.
func TestNothingObserved(t *testing.T) {
	rsp := mustRun(t, req(t, minimalXR(), nil, nil))
	for k := range rsp.GetDesired().GetResources() {
		if got := readiness(t, rsp, k); got != fnv1.Ready_READY_FALSE {
			t.Errorf("%s: ready = %s, want READY_FALSE", k, got)
		}
	}
	want := map[string]cond{
		conditionEnginesReady: {condFalse, "Creating", "0/1 models ready. m: Deployment s-m-deployment-vllm is not created yet"},
		conditionRouterReady:  {condFalse, "Creating", "Deployment s-deployment-router is not created yet; Service s-router-service is not created yet"},
		conditionStorageReady: {condFalse, "Creating", "storage claim s-m-storage-claim is not created yet"},
	}
	for typ, w := range want {
		if diff := cmp.Diff(w, conditionOfType(t, rsp, typ)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", typ, diff)
		}
	}
	wantStatus := map[string]any{
		"endpoint":    "http://s-router-service.llm.svc.cluster.local/v1",
		"readyModels": "0/1",
		"models": []any{map[string]any{
			"name": "m", "servedModelName": "org/m",
			"replicas": float64(1), "readyReplicas": float64(0), "availableReplicas": float64(0), "updatedReplicas": float64(0),
		}},
		"router": map[string]any{"routerType": "roundrobin", "replicas": float64(1), "readyReplicas": float64(0)},
	}
	if diff := cmp.Diff(wantStatus, xrStatus(rsp)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// TestEnginesReady covers each reason of EnginesReady from a Deployment's
// status, with the exact message a person reads.
func TestEnginesReady(t *testing.T) {
	two := func(change ...func(*appsv1.Deployment)) map[string]any {
		return observedDeployment("s-m-deployment-vllm", 2, change...)
	}
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		want     cond
	}{
		"Available": {
			observed: observedReady(),
			want:     cond{condTrue, "Available", "1/1 models ready"},
		},
		"ScaledToZero": {
			xr:       with("replicas", 0),
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 0)),
			want:     cond{condTrue, "Available", "1/1 models ready; scaled to 0 replicas: m"},
		},
		"NotCreated": {
			observed: observedWith("engine-m", nil),
			want:     cond{condFalse, "Creating", "0/1 models ready. m: Deployment s-m-deployment-vllm is not created yet"},
		},
		"GenerationNotObserved": {
			observed: observedWith("engine-m", two(func(d *appsv1.Deployment) { d.Generation = 2 })),
			want:     cond{condFalse, "RollingOut", "0/1 models ready. m: 2/2 replicas available, the Deployment controller has not seen the latest spec yet"},
		},
		"RollingOut": {
			xr:       with("replicas", 2),
			observed: observedWith("engine-m", two(counts(1, 2, 2))),
			want:     cond{condFalse, "RollingOut", "0/1 models ready. m: 2/2 replicas available, 1/2 updated to the latest spec"},
		},
		"PartlyAvailable": {
			xr:       with("replicas", 2),
			observed: observedWith("engine-m", two(counts(2, 1, 1), unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/2 replicas available"},
		},
		"NoneReady": {
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 1, counts(1, 0, 0), unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"AvailableConditionFalse": {
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 1, unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/1 replicas available, but the Deployment is not Available: MinimumReplicasUnavailable: Deployment does not have minimum availability"},
		},
		"AvailableConditionMissing": {
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 1, func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/1 replicas available, but the Deployment is not Available"},
		},
		"ProgressDeadlineExceeded": {
			xr: with("replicas", 2),
			observed: observedWith("engine-m", two(counts(2, 0, 0), unavailable,
				condition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "s-m-deployment-vllm-5d8f7b9c6d" has timed out progressing.`))),
			want: cond{condFalse, "ProgressDeadlineExceeded", "0/1 models ready. m: 0/2 replicas available: Deployment exceeded its progress deadline"},
		},
		"ReplicaFailure": {
			observed: observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 1, counts(0, 0, 0), unavailable,
				condition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", `pods "s-m-deployment-vllm-5d8f7b9c6d-x7k2p" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4`))),
			want: cond{condFalse, "ReplicaFailure", `0/1 models ready. m: 0/1 replicas available, 0/1 updated to the latest spec: FailedCreate: pods "s-m-deployment-vllm-5d8f7b9c6d-x7k2p" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr
			if xr == nil {
				xr = minimalXR()
			}
			rsp := mustRun(t, req(t, xr, nil, tc.observed))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
				t.Errorf("EnginesReady (-want +got):\n%s", diff)
			}
		})
	}
}

// multiXR is a stack of the given models, each by URL.
func multiXR(models ...string) map[string]any {
	items := make([]any, 0, len(models))
	for _, m := range models {
		items = append(items, map[string]any{"name": m, "modelURL": "org/" + m})
	}
	xr := minimalXR()
	xr["spec"] = map[string]any{"models": items}
	return xr
}

// TestPartiallyReadyStack: in a multi-model stack each model is reported on
// its own; the XR is not Ready while one model does not serve, and the
// condition names the models that do not, with the most severe reason.
func TestPartiallyReadyStack(t *testing.T) {
	observed := observedWith(
		"engine-m", nil, "engine-m-service", nil, "engine-m-storage", nil,
		"engine-a", observedDeployment("s-a-deployment-vllm", 1),
		"engine-a-service", observedObject("v1", "Service", "s-a-engine-service"),
		"engine-a-storage", observedClaim("s-a-storage-claim", "Bound"),
		"engine-b", observedDeployment("s-b-deployment-vllm", 1, counts(1, 0, 0), unavailable),
		"engine-b-service", observedObject("v1", "Service", "s-b-engine-service"),
		"engine-b-storage", observedClaim("s-b-storage-claim", "Bound"),
		"engine-c-storage", observedClaim("s-c-storage-claim", "Pending"),
	)
	rsp := mustRun(t, req(t, multiXR("a", "b", "c"), nil, observed))

	for key, want := range map[string]fnv1.Ready{
		"engine-a": fnv1.Ready_READY_TRUE, "engine-b": fnv1.Ready_READY_FALSE, "engine-c": fnv1.Ready_READY_FALSE,
		"engine-a-storage": fnv1.Ready_READY_TRUE, "engine-c-storage": fnv1.Ready_READY_FALSE,
	} {
		if got := readiness(t, rsp, key); got != want {
			t.Errorf("%s: ready = %s, want %s", key, got, want)
		}
	}
	want := cond{condFalse, "Unavailable", "1/3 models ready. b: 0/1 replicas available. c: Deployment s-c-deployment-vllm is not created yet"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
	wantStorage := cond{condFalse, "ClaimPending", "storage claim s-c-storage-claim is Pending: a claim binds once a volume is provisioned for it; with a WaitForFirstConsumer StorageClass, only after its engine pod is scheduled"}
	if diff := cmp.Diff(wantStorage, conditionOfType(t, rsp, conditionStorageReady)); diff != "" {
		t.Errorf("StorageReady (-want +got):\n%s", diff)
	}
	status := xrStatus(rsp)
	wantModels := []any{
		map[string]any{"name": "a", "servedModelName": "org/a", "replicas": float64(1), "readyReplicas": float64(1), "availableReplicas": float64(1), "updatedReplicas": float64(1)},
		map[string]any{"name": "b", "servedModelName": "org/b", "replicas": float64(1), "readyReplicas": float64(0), "availableReplicas": float64(0), "updatedReplicas": float64(1)},
		map[string]any{"name": "c", "servedModelName": "org/c", "replicas": float64(1), "readyReplicas": float64(0), "availableReplicas": float64(0), "updatedReplicas": float64(0)},
	}
	if diff := cmp.Diff(wantModels, status["models"]); diff != "" {
		t.Errorf("status.models (-want +got):\n%s", diff)
	}
	if got := status["readyModels"]; got != "1/3" {
		t.Errorf("status.readyModels = %v, want 1/3", got)
	}
}

// TestManyModelsBounded: the message names at most 8 models, so a large
// stack's condition stays small.
func TestManyModelsBounded(t *testing.T) {
	var models []string
	for i := range 10 {
		models = append(models, fmt.Sprintf("m%d", i))
	}
	rsp := mustRun(t, req(t, multiXR(models...), nil, nil))
	want := "0/10 models ready. " +
		"m0: Deployment s-m0-deployment-vllm is not created yet. m1: Deployment s-m1-deployment-vllm is not created yet. " +
		"m2: Deployment s-m2-deployment-vllm is not created yet. m3: Deployment s-m3-deployment-vllm is not created yet. " +
		"m4: Deployment s-m4-deployment-vllm is not created yet. m5: Deployment s-m5-deployment-vllm is not created yet. " +
		"m6: Deployment s-m6-deployment-vllm is not created yet. m7: Deployment s-m7-deployment-vllm is not created yet. " +
		"2 more models not ready"
	if got := conditionOfType(t, rsp, conditionEnginesReady).Message; got != want {
		t.Errorf("EnginesReady message:\n got: %s\nwant: %s", got, want)
	}
}

// TestRouterReady covers each reason of RouterReady.
func TestRouterReady(t *testing.T) {
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		want     cond
	}{
		"Available": {observed: observedReady(), want: cond{condTrue, "Available", "1/1 router replicas ready"}},
		"ScaledToZero": {
			xr:       with("routerConfig.replicas", 0),
			observed: observedWith("router", observedDeployment("s-deployment-router", 0)),
			want:     cond{condTrue, "Available", "the router is scaled to 0 replicas: nothing answers at the endpoint"},
		},
		"DeploymentNotCreated": {
			observed: observedWith("router", nil),
			want:     cond{condFalse, "Creating", "Deployment s-deployment-router is not created yet"},
		},
		"Creating": {
			observed: observedWith("router-service", nil),
			want:     cond{condFalse, "Creating", "Service s-router-service is not created yet"},
		},
		"NotAvailable": {
			observed: observedWith("router", observedDeployment("s-deployment-router", 1, counts(1, 0, 0), unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 replicas available"},
		},
		"NotAvailableAndNoService": {
			observed: observedWith("router", observedDeployment("s-deployment-router", 1, counts(1, 0, 0), unavailable), "router-service", nil),
			want:     cond{condFalse, "Unavailable", "0/1 replicas available; Service s-router-service is not created yet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr
			if xr == nil {
				xr = minimalXR()
			}
			rsp := mustRun(t, req(t, xr, nil, tc.observed))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionRouterReady)); diff != "" {
				t.Errorf("RouterReady (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStorageReady covers each reason of StorageReady.
func TestStorageReady(t *testing.T) {
	const hint = ": a claim binds once a volume is provisioned for it; with a WaitForFirstConsumer StorageClass, only after its engine pod is scheduled"
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		want     cond
	}{
		"Bound":         {observed: observedReady(), want: cond{condTrue, "Bound", "1/1 model cache claims bound"}},
		"Pending":       {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "Pending")), want: cond{condFalse, "ClaimPending", "storage claim s-m-storage-claim is Pending" + hint}},
		"NoStatusYet":   {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "")), want: cond{condFalse, "ClaimPending", "storage claim s-m-storage-claim is Pending" + hint}},
		"Lost":          {observed: observedWith("engine-m-storage", observedClaim("s-m-storage-claim", "Lost")), want: cond{condFalse, "ClaimLost", "storage claim s-m-storage-claim is Lost: its PersistentVolume no longer exists"}},
		"NotCreated":    {observed: observedWith("engine-m-storage", nil), want: cond{condFalse, "Creating", "storage claim s-m-storage-claim is not created yet"}},
		"Disabled":      {xr: with("storage.enabled", false), observed: observedWith("engine-m-storage", nil), want: cond{condTrue, "NoClaims", "the stack creates no model cache claims"}},
		"ExistingClaim": {xr: with("storage.existingClaimName", "weights"), observed: observedWith("engine-m-storage", nil), want: cond{condTrue, "NoClaims", "the stack creates no model cache claims"}},
		"LostIsWorseThanPending": {
			xr: multiXR("a", "b"),
			observed: map[string]map[string]any{
				"engine-a-storage": observedClaim("s-a-storage-claim", "Pending"),
				"engine-b-storage": observedClaim("s-b-storage-claim", "Lost"),
			},
			want: cond{condFalse, "ClaimLost", "storage claim s-a-storage-claim is Pending; storage claim s-b-storage-claim is Lost: its PersistentVolume no longer exists" + hint},
		},
		"SomeBound": {
			xr: multiXR("a", "b"),
			observed: map[string]map[string]any{
				"engine-a-storage": observedClaim("s-a-storage-claim", "Bound"),
			},
			want: cond{condFalse, "Creating", "storage claim s-b-storage-claim is not created yet"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr
			if xr == nil {
				xr = minimalXR()
			}
			rsp := mustRun(t, req(t, xr, nil, tc.observed))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionStorageReady)); diff != "" {
				t.Errorf("StorageReady (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatus: the XR's status fields from observed Deployments, for a model
// with a served name and a legacy XR in its claim's namespace.
func TestStatus(t *testing.T) {
	xr := with("model.servedModelName", "chat", "replicas", 3, "routerConfig.routerType", "session", "routerConfig.replicas", 2)
	observed := observedWith(
		"engine-m", observedDeployment("s-m-deployment-vllm", 3, counts(2, 1, 1), unavailable),
		"router", observedDeployment("s-deployment-router", 2, counts(2, 2, 1), unavailable),
	)
	want := map[string]any{
		"endpoint":    "http://s-router-service.llm.svc.cluster.local/v1",
		"readyModels": "0/1",
		"models": []any{map[string]any{
			"name": "m", "servedModelName": "chat",
			"replicas": float64(3), "readyReplicas": float64(1), "availableReplicas": float64(1), "updatedReplicas": float64(2),
		}},
		"router": map[string]any{"routerType": "session", "replicas": float64(2), "readyReplicas": float64(2)},
	}
	if diff := cmp.Diff(want, xrStatus(mustRun(t, req(t, xr, nil, observed)))); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	legacy := with()
	legacy["kind"] = "XProductionStack"
	legacy["metadata"] = map[string]any{"name": "s-x7k2p", "labels": map[string]any{labelClaimName: "s", labelClaimNamespace: "team-a"}}
	got := xrStatus(mustRun(t, req(t, legacy, nil, nil)))["endpoint"]
	if got != "http://s-router-service.team-a.svc.cluster.local/v1" {
		t.Errorf("legacy XR: status.endpoint = %v, want the router Service in the claim's namespace", got)
	}
}

// statusOnly keeps what a person sees of a response: the XR's status, the
// readiness of each composed resource, conditions, results and requirements.
func statusOnly(rsp *fnv1.RunFunctionResponse) *fnv1.RunFunctionResponse {
	out := &fnv1.RunFunctionResponse{
		Meta:         rsp.GetMeta(),
		Conditions:   rsp.GetConditions(),
		Results:      rsp.GetResults(),
		Requirements: rsp.GetRequirements(),
		Desired:      &fnv1.State{Composite: rsp.GetDesired().GetComposite(), Resources: map[string]*fnv1.Resource{}},
	}
	for k, r := range rsp.GetDesired().GetResources() {
		out.Desired.Resources[k] = &fnv1.Resource{Ready: r.GetReady()}
	}
	return out
}

// TestObservedExamples renders the seed stack (applied without a namespace,
// so in "default") against each fixture of example/observed, which are also
// inputs of `crossplane render --observed-resources --required-resources`,
// and compares the status, readiness and conditions with golden files.
func TestObservedExamples(t *testing.T) {
	for _, name := range []string{"downloading", "ready", "gpu-pending"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "example", "observed", name)
			r, observed := observedExample(t, name)
			for k, items := range r.GetRequiredResources() {
				if len(items.GetItems()) == 0 {
					t.Errorf("no pod of %s matches requirement %s", dir, k)
				}
			}
			rsp := mustRun(t, r)
			for k := range observed {
				if _, ok := rsp.GetDesired().GetResources()[k]; !ok {
					t.Errorf("%s: observed resource %q is not a resource the function composes", dir, k)
				}
			}
			goldenCompare(t, "observed-"+name, statusOnly(rsp))
		})
	}
}

// TestStatusIntoDesiredXR: the status fields join what an earlier step of
// the pipeline wrote into the desired XR's status; a status that is no
// object is refused with the path, the same on every call.
func TestStatusIntoDesiredXR(t *testing.T) {
	withDesired := func(status any) *fnv1.RunFunctionRequest {
		r := req(t, minimalXR(), nil, nil)
		r.Desired = &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, map[string]any{
			"apiVersion": "serving.vllm.ai/v1alpha1", "kind": "ProductionStack", "status": status})}}
		return r
	}
	st := mustRun(t, withDesired(map[string]any{"earlier": "kept"})).GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	if st["earlier"] != "kept" || st["readyModels"] != "0/1" {
		t.Errorf("desired status = %v, want the earlier step's field and the stack's", st)
	}
	const want = "cannot write the ProductionStack's status: cannot set status.endpoint: "
	for range 5 {
		if got := fatal(t, run(t, withDesired("not an object"))); !strings.HasPrefix(got, want) {
			t.Fatalf("Fatal message %q, want it to start with %q", got, want)
		}
	}
}

// TestAutoscaledStatus: the XR reports the replicas the autoscaler runs, and
// the ScaledObject is ready when KEDA says so.
func TestAutoscaledStatus(t *testing.T) {
	xr := with("autoscaling", map[string]any{"maxReplicas": 4, "prometheusAddress": "http://p:9090"})
	observed := map[string]map[string]any{
		"engine-m": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "s-m-deployment-vllm", "generation": 2},
			"spec":   map[string]any{"replicas": 3},
			"status": map[string]any{"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3, "readyReplicas": 3, "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}},
		"engine-m-autoscaler": {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": map[string]any{"name": "s-m-scaledobject"},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}},
	}
	rsp := mustRun(t, req(t, xr, nil, observed))
	models := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["models"].([]any)
	if got := models[0].(map[string]any)["replicas"]; got != float64(3) {
		t.Errorf("status.models[0].replicas = %v, want the 3 the autoscaler runs", got)
	}
	if got := rsp.GetDesired().GetResources()["engine-m"].GetReady(); got != fnv1.Ready_READY_TRUE {
		t.Errorf("engine Deployment readiness %v, want true", got)
	}
	if got := rsp.GetDesired().GetResources()["engine-m-autoscaler"].GetReady(); got != fnv1.Ready_READY_FALSE {
		t.Errorf("ScaledObject readiness %v, want false while KEDA is not Ready", got)
	}
	observed["engine-m-autoscaler"]["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	rsp = mustRun(t, req(t, xr, nil, observed))
	if got := rsp.GetDesired().GetResources()["engine-m-autoscaler"].GetReady(); got != fnv1.Ready_READY_TRUE {
		t.Errorf("ScaledObject readiness %v, want true once KEDA is Ready", got)
	}
}

func TestEndpointNamesServicePort(t *testing.T) {
	for port, want := range map[int]string{
		80:   "http://s-router-service.llm.svc.cluster.local/v1",
		8080: "http://s-router-service.llm.svc.cluster.local:8080/v1",
	} {
		rsp := mustRun(t, req(t, with("routerConfig.service.port", port), nil, nil))
		got := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)["endpoint"]
		if got != want {
			t.Errorf("port %d: endpoint %v, want %s", port, got, want)
		}
	}
}
