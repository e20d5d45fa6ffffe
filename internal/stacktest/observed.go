package stacktest

// What Crossplane observes of the stack of MinimalXR (stack "s", model "m",
// namespace "llm") and its pods, for the tests of the status and of the
// function.

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// ObservedReady is every composed object of minimalXR as observed once the
// stack serves. Tests change or delete one object at a time.
func ObservedReady() map[string]map[string]any {
	return map[string]map[string]any{
		"engine-m":              ObservedDeployment("s-m-deployment-vllm", 1),
		"engine-m-service":      ObservedObject("v1", "Service", "s-m-engine-service"),
		"engine-m-storage":      ObservedClaim("s-m-storage-claim", "Bound"),
		"router-serviceaccount": ObservedObject("v1", "ServiceAccount", "s-router-service-account"),
		"router-role":           ObservedObject("rbac.authorization.k8s.io/v1", "Role", "s-reader"),
		"router-rolebinding":    ObservedObject("rbac.authorization.k8s.io/v1", "RoleBinding", "s-deployment-access-binding"),
		"router":                ObservedDeployment("s-deployment-router", 1),
		"router-service":        ObservedObject("v1", "Service", "s-router-service"),
	}
}

// ObservedDeployment is a Deployment of replicas that are all up to date and
// available, changed by each of change.
func ObservedDeployment(name string, replicas int32, change ...func(*appsv1.Deployment)) map[string]any {
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
	return ToMap(d)
}

// Counts sets the replica Counts of a Deployment's status.
func Counts(updated, ready, available int32) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = updated, ready, available
		d.Status.UnavailableReplicas = *d.Spec.Replicas - available
	}
}

// Condition sets (or adds) a Condition of a Deployment's status.
func Condition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string) func(*appsv1.Deployment) {
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

var Unavailable = Condition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")

func ObservedObject(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "llm"}}
}

// ObservedRoute is a model's HTTPRoute on the inference extension, saying
// which model holds the gateway's root path ("" for none).
func ObservedRoute(name, rootHolder string) map[string]any {
	r := ObservedObject("gateway.networking.k8s.io/v1", "HTTPRoute", name)
	r["metadata"].(map[string]any)["annotations"] = map[string]any{"serving.vllm.ai/root-path-model": rootHolder}
	return r
}

// ObservedClaim is a PersistentVolumeClaim in phase; "" means no status yet.
func ObservedClaim(name, phase string) map[string]any {
	c := ObservedObject("v1", "PersistentVolumeClaim", name)
	if phase != "" {
		c["status"] = map[string]any{"phase": phase}
	}
	return c
}

func ToMap(o runtime.Object) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		panic(err)
	}
	return m
}

// ObservedWith is ObservedReady with objects replaced; a nil object is
// deleted (not observed).
func ObservedWith(kv ...any) map[string]map[string]any { return Replaced(ObservedReady(), kv...) }

// ObservedExtension is ObservedReady's stack on the inference extension:
// no router, model m's picker s-m-epp Available and its pool s-m-pool
// Accepted with its references resolved.
func ObservedExtension() map[string]map[string]any {
	o := ObservedReady()
	delete(o, "router")
	delete(o, "router-service")
	o["engine-m-epp"] = ObservedDeployment("s-m-epp", 1)
	o["engine-m-inferencepool"] = ObservedPool("s-m-pool", [3]string{"Accepted", "True", "Accepted"}, [3]string{"ResolvedRefs", "True", "ResolvedRefs"})
	return o
}

// Replaced is o with objects replaced by key (key, object, ...); a nil
// object is deleted (not observed).
func Replaced(o map[string]map[string]any, kv ...any) map[string]map[string]any {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(o, kv[i].(string))
			continue
		}
		o[kv[i].(string)] = kv[i+1].(map[string]any)
	}
	return o
}

func TestPod(name, component, app string, status corev1.PodStatus) corev1.Pod {
	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: map[string]string{
			"app.kubernetes.io/name": app, "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": component,
			"app.kubernetes.io/part-of": "vllm-stack", "app.kubernetes.io/managed-by": "crossplane",
		}},
		Status: status,
	}
}

func ModelPod(name string, status corev1.PodStatus) corev1.Pod {
	return TestPod(name, "serving-engine", "m", status)
}

// Scheduled is a pod placed on a node and Running containers, not ready.
func Scheduled(containers ...corev1.ContainerStatus) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [vllm]"},
		},
		ContainerStatuses: containers,
	}
}

const EngineImage = "docker.io/vllm/vllm-openai:v0.8.3"

func Waiting(reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "vllm", Image: EngineImage, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func Running(started, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "vllm", Image: EngineImage, Started: &started, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

// Restarted adds the last termination of a container.
func Restarted(cs corev1.ContainerStatus, reason string, code int32) corev1.ContainerStatus {
	cs.RestartCount = 4
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}
	return cs
}

func ReadyPod(name string) corev1.Pod {
	st := Scheduled(Running(true, true))
	st.Conditions[1] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	return ModelPod(name, st)
}

func StartingPod(name string) corev1.Pod { return ModelPod(name, Scheduled(Running(false, false))) }

func UnschedulablePod(name string) corev1.Pod {
	return ModelPod(name, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
	}}})
}

// ObservedLWS is a LeaderWorkerSet of groups groups as the LWS controller
// reports it once every group is ready, changed by change.
func ObservedLWS(name string, groups int32, change ...func(*lwsv1.LeaderWorkerSet)) map[string]any {
	l := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Generation: 1},
		Spec:       lwsv1.LeaderWorkerSetSpec{Replicas: &groups},
		Status: lwsv1.LeaderWorkerSetStatus{Replicas: groups, ReadyReplicas: groups, UpdatedReplicas: groups, Conditions: []metav1.Condition{
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", Message: "All replicas are ready", ObservedGeneration: 1},
		}},
	}
	for _, c := range change {
		c(l)
	}
	return ToMap(l)
}

// ObservedPool is an InferencePool as a Gateway (gws/gw) reports it: one
// parent with each condition given as type, status, reason; without
// conditions, no parent at all.
func ObservedPool(name string, conds ...[3]string) map[string]any {
	o := ObservedObject("inference.networking.k8s.io/v1", "InferencePool", name)
	if conds == nil {
		return o
	}
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "message": "m"})
	}
	o["status"] = map[string]any{"parents": []any{map[string]any{
		"parentRef":  map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "gws"},
		"conditions": cs,
	}}}
	return o
}
