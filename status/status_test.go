package status

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// TestReadiness covers each readiness rule of SPEC §5 on the composed
// resource it applies to. Crossplane marks the XR Ready when all are ready.
func TestReadiness(t *testing.T) {
	deployment := func(change ...func(*appsv1.Deployment)) map[string]any {
		return stacktest.ObservedDeployment("s-m-deployment-vllm", 1, change...)
	}
	generation := func(g, observed int64) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Generation, d.Status.ObservedGeneration = g, observed }
	}
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		key      string
		want     bool
	}{
		"DeploymentReady":                 {observed: stacktest.ObservedReady(), key: "engine-m", want: true},
		"DeploymentNotObserved":           {observed: stacktest.ObservedWith("engine-m", nil), key: "engine-m", want: false},
		"DeploymentGenerationNotObserved": {observed: stacktest.ObservedWith("engine-m", deployment(generation(2, 1))), key: "engine-m", want: false},
		"DeploymentNewerGenerationSeen":   {observed: stacktest.ObservedWith("engine-m", deployment(generation(2, 3))), key: "engine-m", want: true},
		"DeploymentNotUpdated":            {observed: stacktest.ObservedWith("engine-m", deployment(stacktest.Counts(0, 1, 1))), key: "engine-m", want: false},
		"DeploymentNotAvailable":          {observed: stacktest.ObservedWith("engine-m", deployment(stacktest.Counts(1, 1, 0))), key: "engine-m", want: false},
		"DeploymentNoneReady":             {observed: stacktest.ObservedWith("engine-m", deployment(stacktest.Counts(1, 0, 0), stacktest.Unavailable)), key: "engine-m", want: false},
		"DeploymentAvailableFalse":        {observed: stacktest.ObservedWith("engine-m", deployment(stacktest.Unavailable)), key: "engine-m", want: false},
		"DeploymentAvailableMissing": {
			observed: stacktest.ObservedWith("engine-m", deployment(func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			key:      "engine-m", want: false,
		},
		"DeploymentScaledToZero": {
			xr:       with("replicas", 0),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 0, func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			key:      "engine-m", want: true,
		},
		"DeploymentScaledToZeroNotObserved": {
			xr:       with("replicas", 0),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 0, generation(2, 1))),
			key:      "engine-m", want: false,
		},
		"RouterReady":           {observed: stacktest.ObservedReady(), key: "router", want: true},
		"RouterNotAvailable":    {observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)), key: "router", want: false},
		"ClaimBound":            {observed: stacktest.ObservedReady(), key: "engine-m-storage", want: true},
		"ClaimPending":          {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Pending")), key: "engine-m-storage", want: false},
		"ClaimLost":             {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Lost")), key: "engine-m-storage", want: false},
		"ClaimWithoutStatus":    {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "")), key: "engine-m-storage", want: false},
		"ClaimNotObserved":      {observed: stacktest.ObservedWith("engine-m-storage", nil), key: "engine-m-storage", want: false},
		"ServiceExists":         {observed: stacktest.ObservedReady(), key: "engine-m-service", want: true},
		"ServiceNotObserved":    {observed: stacktest.ObservedWith("engine-m-service", nil), key: "engine-m-service", want: false},
		"RouterServiceExists":   {observed: stacktest.ObservedReady(), key: "router-service", want: true},
		"RouterServiceMissing":  {observed: stacktest.ObservedWith("router-service", nil), key: "router-service", want: false},
		"ServiceAccountExists":  {observed: stacktest.ObservedReady(), key: "router-serviceaccount", want: true},
		"ServiceAccountMissing": {observed: stacktest.ObservedWith("router-serviceaccount", nil), key: "router-serviceaccount", want: false},
		"RoleExists":            {observed: stacktest.ObservedReady(), key: "router-role", want: true},
		"RoleMissing":           {observed: stacktest.ObservedWith("router-role", nil), key: "router-role", want: false},
		"RoleBindingExists":     {observed: stacktest.ObservedReady(), key: "router-rolebinding", want: true},
		"RoleBindingMissing":    {observed: stacktest.ObservedWith("router-rolebinding", nil), key: "router-rolebinding", want: false},
		"ChatTemplateExists": {
			xr:       with("model.chatTemplate", "{{ x }}"),
			observed: stacktest.ObservedWith("engine-m-chat-template", stacktest.ObservedObject("v1", "ConfigMap", "s-m-chat-templates")),
			key:      "engine-m-chat-template", want: true,
		},
		"ChatTemplateMissing": {xr: with("model.chatTemplate", "{{ x }}"), observed: stacktest.ObservedReady(), key: "engine-m-chat-template", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := tc.xr
			if xr == nil {
				xr = minimalXR()
			}
			rsp := mustRun(t, req(t, xr, nil, tc.observed))
			if got := readiness(t, rsp, tc.key); got != tc.want {
				t.Errorf("%s: ready = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestEverythingReady: with every object ready, every composed resource is
// ready (so the XR is) and every condition is True.
func TestEverythingReady(t *testing.T) {
	rsp := mustRun(t, req(t, minimalXR(), nil, stacktest.ObservedReady()))
	for _, k := range rsp.keys {
		if !readiness(t, rsp, k) {
			t.Errorf("%s: not ready, want ready", k)
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
	if n := len(rsp.status.Conditions()); n != 3 {
		t.Errorf("got %d conditions, want EnginesReady, RouterReady and StorageReady only", n)
	}
}

// TestNothingObserved is the first reconcile: nothing exists yet.
func TestNothingObserved(t *testing.T) {
	rsp := mustRun(t, req(t, minimalXR(), nil, nil))
	for _, k := range rsp.keys {
		if readiness(t, rsp, k) {
			t.Errorf("%s: ready, want not ready", k)
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
			"modelCache": onEngineStart("s-m-storage-claim"),
		}},
		"router": map[string]any{"routerType": "roundrobin", "replicas": float64(1), "readyReplicas": float64(0)},
	}
	if diff := cmp.Diff(wantStatus, xrStatus(rsp)); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// onEngineStart is the modelCache of a model without storage.prefetch, on
// the claim the stack makes for it.
func onEngineStart(claim string) map[string]any {
	return map[string]any{"state": "OnEngineStart", "reason": "each engine pod downloads the model into claim " + claim +
		" when it starts, skipping files already there; storage.prefetch downloads it once, before the engines start"}
}

// TestEnginesReady covers each reason of EnginesReady from a Deployment's
// status, with the exact message a person reads.
func TestEnginesReady(t *testing.T) {
	two := func(change ...func(*appsv1.Deployment)) map[string]any {
		return stacktest.ObservedDeployment("s-m-deployment-vllm", 2, change...)
	}
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		want     cond
	}{
		"Available": {
			observed: stacktest.ObservedReady(),
			want:     cond{condTrue, "Available", "1/1 models ready"},
		},
		"ScaledToZero": {
			xr:       with("replicas", 0),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 0)),
			want:     cond{condTrue, "Available", "1/1 models ready; scaled to 0 replicas: m"},
		},
		// scaleToZero: at zero by design the model is ready and says it
		// wakes on the next request (issue 32).
		"ScaledToZeroWhileIdle": {
			xr: with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
				"scaleToZero", map[string]any{"maxReplicas": 2, "prometheusAddress": "http://prometheus:9090"}),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 0)),
			want:     cond{condTrue, "Available", "1/1 models ready; scaled to zero while idle, woken by the next request: m"},
		},
		"WakingFromZero": {
			xr: with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
				"scaleToZero", map[string]any{"maxReplicas": 2, "prometheusAddress": "http://prometheus:9090"}),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: starting from zero (woken by a request, or first applied): 0/1 replicas available"},
		},
		"NotCreated": {
			observed: stacktest.ObservedWith("engine-m", nil),
			want:     cond{condFalse, "Creating", "0/1 models ready. m: Deployment s-m-deployment-vllm is not created yet"},
		},
		"GenerationNotObserved": {
			observed: stacktest.ObservedWith("engine-m", two(func(d *appsv1.Deployment) { d.Generation = 2 })),
			want:     cond{condFalse, "RollingOut", "0/1 models ready. m: 2/2 replicas available, the Deployment controller has not seen the latest spec yet"},
		},
		"RollingOut": {
			xr:       with("replicas", 2),
			observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(1, 2, 2))),
			want:     cond{condFalse, "RollingOut", "0/1 models ready. m: 2/2 replicas available, 1/2 updated to the latest spec"},
		},
		"PartlyAvailable": {
			xr:       with("replicas", 2),
			observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(2, 1, 1), stacktest.Unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/2 replicas available"},
		},
		"NoneReady": {
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"AvailableConditionFalse": {
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/1 replicas available, but the Deployment is not Available: MinimumReplicasUnavailable: Deployment does not have minimum availability"},
		},
		"AvailableConditionMissing": {
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			want:     cond{condFalse, "Unavailable", "0/1 models ready. m: 1/1 replicas available, but the Deployment is not Available"},
		},
		"ProgressDeadlineExceeded": {
			xr: with("replicas", 2),
			observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(2, 0, 0), stacktest.Unavailable,
				stacktest.Condition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "s-m-deployment-vllm-5d8f7b9c6d" has timed out progressing.`))),
			want: cond{condFalse, "ProgressDeadlineExceeded", "0/1 models ready. m: 0/2 replicas available: Deployment exceeded its progress deadline"},
		},
		"ReplicaFailure": {
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(0, 0, 0), stacktest.Unavailable,
				stacktest.Condition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", `pods "s-m-deployment-vllm-5d8f7b9c6d-x7k2p" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4`))),
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
func multiXR(models ...string) map[string]any { return stacktest.MultiXR(models...) }

// TestPartiallyReadyStack: in a multi-model stack each model is reported on
// its own; the XR is not Ready while one model does not serve, and the
// condition names the models that do not, with the most severe reason.
func TestPartiallyReadyStack(t *testing.T) {
	observed := stacktest.ObservedWith(
		"engine-m", nil, "engine-m-service", nil, "engine-m-storage", nil,
		"engine-a", stacktest.ObservedDeployment("s-a-deployment-vllm", 1),
		"engine-a-service", stacktest.ObservedObject("v1", "Service", "s-a-engine-service"),
		"engine-a-storage", stacktest.ObservedClaim("s-a-storage-claim", "Bound"),
		"engine-b", stacktest.ObservedDeployment("s-b-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable),
		"engine-b-service", stacktest.ObservedObject("v1", "Service", "s-b-engine-service"),
		"engine-b-storage", stacktest.ObservedClaim("s-b-storage-claim", "Bound"),
		"engine-c-storage", stacktest.ObservedClaim("s-c-storage-claim", "Pending"),
	)
	rsp := mustRun(t, req(t, multiXR("a", "b", "c"), nil, observed))

	for key, want := range map[string]bool{
		"engine-a": true, "engine-b": false, "engine-c": false,
		"engine-a-storage": true, "engine-c-storage": false,
	} {
		if got := readiness(t, rsp, key); got != want {
			t.Errorf("%s: ready = %v, want %v", key, got, want)
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
		map[string]any{"name": "a", "servedModelName": "org/a", "replicas": float64(1), "readyReplicas": float64(1), "availableReplicas": float64(1), "updatedReplicas": float64(1), "modelCache": onEngineStart("s-a-storage-claim")},
		map[string]any{"name": "b", "servedModelName": "org/b", "replicas": float64(1), "readyReplicas": float64(0), "availableReplicas": float64(0), "updatedReplicas": float64(1), "modelCache": onEngineStart("s-b-storage-claim")},
		map[string]any{"name": "c", "servedModelName": "org/c", "replicas": float64(1), "readyReplicas": float64(0), "availableReplicas": float64(0), "updatedReplicas": float64(0), "modelCache": onEngineStart("s-c-storage-claim")},
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
		"Available": {observed: stacktest.ObservedReady(), want: cond{condTrue, "Available", "1/1 router replicas ready"}},
		"ScaledToZero": {
			xr:       with("routerConfig.replicas", 0),
			observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 0)),
			want:     cond{condTrue, "Available", "the router is scaled to 0 replicas: nothing answers at the endpoint"},
		},
		"DeploymentNotCreated": {
			observed: stacktest.ObservedWith("router", nil),
			want:     cond{condFalse, "Creating", "Deployment s-deployment-router is not created yet"},
		},
		"Creating": {
			observed: stacktest.ObservedWith("router-service", nil),
			want:     cond{condFalse, "Creating", "Service s-router-service is not created yet"},
		},
		"NotAvailable": {
			observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
			want:     cond{condFalse, "Unavailable", "0/1 replicas available"},
		},
		"NotAvailableAndNoService": {
			observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable), "router-service", nil),
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
		"Bound":         {observed: stacktest.ObservedReady(), want: cond{condTrue, "Bound", "1/1 model cache claims bound"}},
		"Pending":       {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Pending")), want: cond{condFalse, "ClaimPending", "storage claim s-m-storage-claim is Pending" + hint}},
		"NoStatusYet":   {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "")), want: cond{condFalse, "ClaimPending", "storage claim s-m-storage-claim is Pending" + hint}},
		"Lost":          {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Lost")), want: cond{condFalse, "ClaimLost", "storage claim s-m-storage-claim is Lost: its PersistentVolume no longer exists"}},
		"NotCreated":    {observed: stacktest.ObservedWith("engine-m-storage", nil), want: cond{condFalse, "Creating", "storage claim s-m-storage-claim is not created yet"}},
		"Disabled":      {xr: with("storage.enabled", false), observed: stacktest.ObservedWith("engine-m-storage", nil), want: cond{condTrue, "NoClaims", "the stack creates no model cache claims"}},
		"ExistingClaim": {xr: with("storage.existingClaimName", "weights"), observed: stacktest.ObservedWith("engine-m-storage", nil), want: cond{condTrue, "NoClaims", "the stack creates no model cache claims"}},
		"LostIsWorseThanPending": {
			xr: multiXR("a", "b"),
			observed: map[string]map[string]any{
				"engine-a-storage": stacktest.ObservedClaim("s-a-storage-claim", "Pending"),
				"engine-b-storage": stacktest.ObservedClaim("s-b-storage-claim", "Lost"),
			},
			want: cond{condFalse, "ClaimLost", "storage claim s-a-storage-claim is Pending; storage claim s-b-storage-claim is Lost: its PersistentVolume no longer exists" + hint},
		},
		// A filesystem KV offload tier on a claim the stack creates.
		"OffloadBound": {
			xr: with("resources.memory", "32Gi", "kvOffloading", map[string]any{"cpu": "8Gi", "fileSystem": map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi"}}}),
			observed: map[string]map[string]any{
				"engine-m-storage":    stacktest.ObservedClaim("s-m-storage-claim", "Bound"),
				"engine-m-kv-offload": stacktest.ObservedClaim("s-m-kv-offload", "Bound"),
			},
			want: cond{condTrue, "Bound", "1/1 model cache claims bound, 1/1 KV offload claims bound"},
		},
		"OffloadPending": {
			xr: with("storage.enabled", false, "resources.memory", "32Gi", "kvOffloading", map[string]any{"cpu": "8Gi", "fileSystem": map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi"}}}),
			observed: map[string]map[string]any{
				"engine-m-kv-offload": stacktest.ObservedClaim("s-m-kv-offload", "Pending"),
			},
			want: cond{condFalse, "ClaimPending", "KV offload claim s-m-kv-offload is Pending" + hint},
		},
		"OffloadNotCreated": {
			xr:       with("storage.enabled", false, "resources.memory", "32Gi", "kvOffloading", map[string]any{"cpu": "8Gi", "fileSystem": map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi"}}}),
			observed: map[string]map[string]any{},
			want:     cond{condFalse, "Creating", "KV offload claim s-m-kv-offload is not created yet"},
		},
		"SomeBound": {
			xr: multiXR("a", "b"),
			observed: map[string]map[string]any{
				"engine-a-storage": stacktest.ObservedClaim("s-a-storage-claim", "Bound"),
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
	observed := stacktest.ObservedWith(
		"engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 3, stacktest.Counts(2, 1, 1), stacktest.Unavailable),
		"router", stacktest.ObservedDeployment("s-deployment-router", 2, stacktest.Counts(2, 2, 1), stacktest.Unavailable),
	)
	want := map[string]any{
		"endpoint":    "http://s-router-service.llm.svc.cluster.local/v1",
		"readyModels": "0/1",
		"models": []any{map[string]any{
			"name": "m", "servedModelName": "chat",
			"replicas": float64(3), "readyReplicas": float64(1), "availableReplicas": float64(1), "updatedReplicas": float64(2),
			"modelCache": onEngineStart("s-m-storage-claim"),
		}},
		"router": map[string]any{"routerType": "session", "replicas": float64(2), "readyReplicas": float64(2)},
	}
	if diff := cmp.Diff(want, xrStatus(mustRun(t, req(t, xr, nil, observed)))); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	legacy := with()
	legacy["kind"] = "XProductionStack"
	legacy["metadata"] = map[string]any{"name": "s-x7k2p", "labels": map[string]any{"crossplane.io/claim-name": "s", "crossplane.io/claim-namespace": "team-a"}}
	got := xrStatus(mustRun(t, req(t, legacy, nil, nil)))["endpoint"]
	if got != "http://s-router-service.team-a.svc.cluster.local/v1" {
		t.Errorf("legacy XR: status.endpoint = %v, want the router Service in the claim's namespace", got)
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
		"engine-m-scaledobject": {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": map[string]any{"name": "s-m-scaledobject"},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}},
	}
	rsp := mustRun(t, req(t, xr, nil, observed))
	models := xrStatus(rsp)["models"].([]any)
	if got := models[0].(map[string]any)["replicas"]; got != float64(3) {
		t.Errorf("status.models[0].replicas = %v, want the 3 the autoscaler runs", got)
	}
	if got := readiness(t, rsp, "engine-m"); !got {
		t.Errorf("engine Deployment readiness %v, want true", got)
	}
	if got := readiness(t, rsp, "engine-m-scaledobject"); got {
		t.Errorf("ScaledObject readiness %v, want false while KEDA is not Ready", got)
	}
	observed["engine-m-scaledobject"]["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	rsp = mustRun(t, req(t, xr, nil, observed))
	if got := readiness(t, rsp, "engine-m-scaledobject"); !got {
		t.Errorf("ScaledObject readiness %v, want true once KEDA is Ready", got)
	}
}

func TestEndpointNamesServicePort(t *testing.T) {
	for port, want := range map[int]string{
		80:   "http://s-router-service.llm.svc.cluster.local/v1",
		8080: "http://s-router-service.llm.svc.cluster.local:8080/v1",
	} {
		rsp := mustRun(t, req(t, with("routerConfig.service.port", port), nil, nil))
		got := xrStatus(rsp)["endpoint"]
		if got != want {
			t.Errorf("port %d: endpoint %v, want %s", port, got, want)
		}
	}
}

// TestDisaggregatedStatus: a disaggregated model is listed once per group,
// ready when both groups are, and a condition names the group that is not.
func TestDisaggregatedStatus(t *testing.T) {
	xr := with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"disaggregation", map[string]any{"decode": map[string]any{"replicas": 2}})
	observed := stacktest.ObservedWith(
		"engine-m", nil, "engine-m-service", nil, "engine-m-storage", nil,
		"engine-m-prefill", stacktest.ObservedDeployment("s-m-prefill-deployment-vllm", 1),
		"engine-m-prefill-service", stacktest.ObservedObject("v1", "Service", "s-m-prefill-engine-service"),
		"engine-m-prefill-storage", stacktest.ObservedClaim("s-m-prefill-storage-claim", "Bound"),
		"engine-m-decode", stacktest.ObservedDeployment("s-m-decode-deployment-vllm", 2, stacktest.Counts(2, 1, 1), stacktest.Unavailable),
		"engine-m-decode-service", stacktest.ObservedObject("v1", "Service", "s-m-decode-engine-service"),
		"engine-m-decode-storage", stacktest.ObservedClaim("s-m-decode-storage-claim", "Bound"),
	)
	rsp := mustRun(t, req(t, xr, nil, observed))
	want := cond{condFalse, "Unavailable", "0/1 models ready. m (decode): 1/2 replicas available"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
	st := xrStatus(rsp)
	if st["readyModels"] != "0/1" {
		t.Errorf("readyModels %v, want 0/1", st["readyModels"])
	}
	var roles []any
	for _, m := range st["models"].([]any) {
		roles = append(roles, m.(map[string]any)["role"])
	}
	if diff := cmp.Diff([]any{"prefill", "decode"}, roles); diff != "" {
		t.Errorf("status.models roles (-want +got):\n%s", diff)
	}
	if got := st["router"].(map[string]any)["routerType"]; got != "disaggregated_prefill_orchestrated" {
		t.Errorf("router type %v", got)
	}
	observed["engine-m-decode"] = stacktest.ObservedDeployment("s-m-decode-deployment-vllm", 2)
	if got := xrStatus(mustRun(t, req(t, xr, nil, observed)))["readyModels"]; got != "1/1" {
		t.Errorf("readyModels %v once both groups are ready, want 1/1", got)
	}
}

// TestMultiNodeStatus: a multi-node model counts groups; a group that is
// not ready is explained by its leader's and workers' pods; the
// LeaderWorkerSet is ready once every group is, on the latest spec.
func TestMultiNodeStatus(t *testing.T) {
	xr := with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2}, "replicas", 2,
		"vllmConfig.tensorParallelSize", 2, "resources.gpu", "1", "storage.accessModes", []any{"ReadWriteMany"})
	observed := stacktest.ObservedWith("engine-m", nil, "engine-m-leaderworkerset", stacktest.ObservedLWS("s-m-lws", 2))
	rsp := mustRun(t, req(t, xr, nil, observed))
	if !readiness(t, rsp, "engine-m-leaderworkerset") || conditionOfType(t, rsp, conditionEnginesReady).Status != condTrue {
		t.Errorf("ready LeaderWorkerSet: readiness %v, EnginesReady %+v", rsp.ready, conditionOfType(t, rsp, conditionEnginesReady))
	}
	m := xrStatus(rsp)["models"].([]any)[0].(map[string]any)
	if fmt.Sprint(m["replicas"], m["readyReplicas"]) != "2 2" {
		t.Errorf("status.models[0] %v: want 2 of 2 groups ready", m)
	}
	worker := stacktest.TestPod("s-m-lws-1-1", "serving-engine-worker", "m", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}})
	for name, tc := range map[string]struct {
		lws  map[string]any
		pods []corev1.Pod
		want cond
	}{
		"NotCreated": {want: cond{condFalse, "Creating", "0/1 models ready. m: LeaderWorkerSet s-m-lws is not created yet"}},
		"NoControllerYet": {lws: stacktest.ObservedLWS("s-m-lws", 2, func(l *lwsv1.LeaderWorkerSet) { l.Status = lwsv1.LeaderWorkerSetStatus{} }),
			want: cond{condFalse, "RollingOut", "0/1 models ready. m: 0/2 groups ready, the LeaderWorkerSet controller has not reported on it yet"}},
		"GroupWaitsForWorker": {lws: stacktest.ObservedLWS("s-m-lws", 2, func(l *lwsv1.LeaderWorkerSet) {
			l.Status.ReadyReplicas = 1
			l.Status.Conditions[0] = metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "GroupsNotReady", ObservedGeneration: 1}
		}), pods: []corev1.Pod{worker}, want: cond{condFalse, "Unschedulable", "0/1 models ready. m: 1/2 groups ready; pod s-m-lws-1-1: unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"}},
		"RollingOut": {lws: stacktest.ObservedLWS("s-m-lws", 2, func(l *lwsv1.LeaderWorkerSet) { l.Status.UpdatedReplicas = 1 }),
			want: cond{condFalse, "RollingOut", "0/1 models ready. m: 2/2 groups ready, 1/2 updated to the latest spec"}},
		"ConditionOfOlderSpec": {lws: stacktest.ObservedLWS("s-m-lws", 2, func(l *lwsv1.LeaderWorkerSet) { l.Generation = 2 }),
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 2/2 groups ready, the LeaderWorkerSet controller has not reported the latest spec Available yet"}},
	} {
		t.Run(name, func(t *testing.T) {
			obs := stacktest.ObservedWith("engine-m", nil)
			if tc.lws != nil {
				obs["engine-m-leaderworkerset"] = tc.lws
			}
			rsp := mustRun(t, withPods(t, req(t, xr, nil, obs), tc.pods...))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
				t.Errorf("EnginesReady (-want +got):\n%s", diff)
			}
			if tc.lws != nil && readiness(t, rsp, "engine-m-leaderworkerset") {
				t.Errorf("an unready LeaderWorkerSet is ready")
			}
		})
	}
}
