package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/chartkeys"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
)

// The "Coming from the Helm chart" table of docs/helm.md maps every key of the
// vLLM production-stack chart's values to a ProductionStack field, or says
// why it is not needed. TestHelmValues has one case per row, keyed by the
// row's first cell, asserting what the row promises;
// TestHelmTableMatchesTests fails when a row has no case or a case no row.

// Fatal messages the Helm rows rely on.
const (
	// routerType kvaware on a stack whose engine (spec.model of
	// minimalXR) has no LMCache.
	helmMsgKVAwareNeedsLMCache = helmInvalid + "spec.lmcacheConfig.enabled must be true with routerConfig.routerType kvaware: the router finds cached prefixes through each engine's LMCache; enable LMCache for m or use routerType prefixaware"
	// prefixMinMatchLength with the default routerType.
	helmMsgPrefixMinMatchNeedsPrefixAware = helmInvalid + "spec.routerConfig.prefixMinMatchLength applies to routerType prefixaware only, and routerType is roundrobin: set routerType to prefixaware or remove prefixMinMatchLength"
	// Two router replicas with kvaware.
	helmMsgKVAwareOneRouter = helmInvalid + "spec.routerConfig.replicas 2 is invalid with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; use 1 replica"
	// oneOf's message, with kvaware among the allowed routerTypes.
	helmMsgDisaggregatedPrefill = helmInvalid + `spec.routerConfig.routerType "disaggregated_prefill" is not supported: use one of roundrobin, session, prefixaware, kvaware`
	// A literal where the API takes a Secret reference.
	helmMsgHFTokenLiteral = "cannot decode spec: cannot unmarshal string into spec.vllmConfig.hfTokenSecret of type v1alpha1.SecretKeySelector"
	helmMsgAPIKeyLiteral  = "cannot decode spec: cannot unmarshal string into spec.routerConfig.apiKeySecret of type v1alpha1.SecretKeySelector"
)

const helmInvalid = "invalid ProductionStack: "

// helmUnknownField is the Fatal message for a spec field the API does not
// have.
func helmUnknownField(field string) string {
	return `spec has fields the ProductionStack API does not know: unknown field "` + field + `"; check the spelling against ` + "`kubectl explain productionstack.spec`"
}

// The router's arguments around the routing logic, for stack s in llm.
var (
	helmRouterHead = []string{"--host", "0.0.0.0", "--port", "8000", "--service-discovery", "k8s", "--k8s-namespace=llm",
		"--k8s-label-selector=app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine"}
	helmRouterTail = []string{"--engine-stats-interval", "15", "--request-stats-window", "60"}
)

func helmRouterArgs(middle ...string) []string {
	return slices.Concat(helmRouterHead, middle, helmRouterTail)
}

// helmRun runs the function as a stack's second reconcile sees it, when
// every object is composed, and fails on a Fatal result.
func helmRun(t *testing.T, xr map[string]any) response {
	t.Helper()
	rsp := reconciled(t, xr, nil)
	if msg := rsp.refusal; msg != "" {
		t.Fatalf("unexpected Fatal result: %s", msg)
	}
	return rsp
}

func helmDeployment(t *testing.T, rsp response, key string) *appsv1.Deployment {
	t.Helper()
	return desired(t, rsp, key, &appsv1.Deployment{})
}

// helmEqual fails the test when got differs from want.
func helmEqual(t *testing.T, what string, want, got any) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// helmFatal runs xr and checks its exact Fatal message.
func helmFatal(t *testing.T, xr map[string]any, want string) {
	t.Helper()
	if got := fatal(t, run(t, req(t, xr, nil, nil))); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

func helmKeys(rsp response) []string {
	k := keys(rsp)
	slices.Sort(k)
	return k
}

func helmModels(items ...map[string]any) []any {
	out := make([]any, len(items))
	for i, m := range items {
		out[i] = m
	}
	return out
}

// helmStackLabels are the labels of a component's objects in stack s.
func helmStackLabels(name, component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": component,
		"app.kubernetes.io/part-of": "vllm-stack", "app.kubernetes.io/managed-by": "crossplane",
	}
}

func helmEngineLabels() map[string]string {
	l := helmStackLabels("m", "serving-engine")
	l["model"] = "m"
	return l
}

func helmQ(s string) resource.Quantity { return resource.MustParse(s) }

func helmHTTPProbe(period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds: period, FailureThreshold: failures,
	}
}

var (
	helmModelCacheVolume = corev1.Volume{Name: "s-storage", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "s-m-storage-claim"}}}
	helmModelCacheMount = corev1.VolumeMount{Name: "s-storage", MountPath: "/data"}
	helmLMCacheEnv      = engineEnvOf("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO")
	helmStackKeys       = []string{"engine-m", "engine-m-service", "engine-m-storage",
		"router", "router-role", "router-rolebinding", "router-service", "router-serviceaccount"}
)

// helmKVAwareEnv is what an engine gets with routerType kvaware, after the
// LMCache variables, for the router Service s-router-service.
func helmKVAwareEnv(controllerPort, replyPort, workerPorts, heartbeat string) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "PYTHONHASHSEED", Value: "0"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "LMCACHE_ENABLE_CONTROLLER", Value: "True"},
		{Name: "LMCACHE_LMCACHE_INSTANCE_ID", Value: "$(POD_NAME)"},
		{Name: "LMCACHE_CONTROLLER_PULL_URL", Value: "s-router-service:" + controllerPort},
		{Name: "LMCACHE_CONTROLLER_REPLY_URL", Value: "s-router-service:" + replyPort},
		{Name: "LMCACHE_LMCACHE_WORKER_PORTS", Value: workerPorts},
		{Name: "LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME", Value: heartbeat},
	}
}

// helmKVAwareArgs are the router's routing arguments with kvaware and the
// default session key.
func helmKVAwareArgs(controllerPort, replyPort, heartbeatPort string) []string {
	return []string{"--routing-logic=kvaware", "--session-key=x-user-id", "--lmcache-controller-port=" + controllerPort,
		"--lmcache-controller-reply-port=" + replyPort, "--lmcache-controller-heartbeat-port=" + heartbeatPort}
}

// helmRows are the test cases of the docs/helm.md table, keyed by the first cell
// of each row exactly as written there.
func helmRows() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		"`servingEngineSpec.enableEngine`, `routerSpec.enableRouter`": func(t *testing.T) {
			helmFatal(t, with("model", nil), helmInvalid+"spec.model is required: set spec.model (one model) or spec.models (several models behind one router)")
			helmEqual(t, "objects of a minimal stack, router included", helmStackKeys, helmKeys(helmRun(t, minimalXR())))
		},

		"`servingEngineSpec.modelSpec[].name`": func(t *testing.T) {
			rsp := helmRun(t, with("model", nil, "models", helmModels(map[string]any{"name": "Llama-3.2-1B-Instruct", "modelURL": "meta-llama/Llama-3.2-1B-Instruct"})))
			d := helmDeployment(t, rsp, "engine-llama-3-2-1b-instruct")
			svc := desired(t, rsp, "engine-llama-3-2-1b-instruct-service", &corev1.Service{})
			helmEqual(t, "names and model label",
				[]string{"s-llama-3-2-1b-instruct-deployment-vllm", "s-llama-3-2-1b-instruct-engine-service", "Llama-3.2-1B-Instruct"},
				[]string{d.Name, svc.Name, d.Spec.Template.Labels["model"]})
		},

		"`modelSpec[].enabled`": func(t *testing.T) {
			rsp := helmRun(t, with("replicas", 0))
			helmEqual(t, "replicas", ptr.To(int32(0)), helmDeployment(t, rsp, "engine-m").Spec.Replicas)
			helmEqual(t, "a scaled-down model keeps its objects", helmStackKeys, helmKeys(rsp))
		},

		"`modelSpec[].repository`, `tag`": func(t *testing.T) {
			c := engineContainer0(t, helmRun(t, with("vllmConfig.image", "lmcache/vllm-openai:v0.3.5")), "engine-m")
			helmEqual(t, "image and command", []string{"docker.io/lmcache/vllm-openai:v0.3.5", "/opt/venv/bin/vllm", "serve"},
				append([]string{c.Image}, c.Command...))
			// An lmcache/vllm-openai tag is LMCache's release: engineVersion
			// says which vLLM the image runs.
			c = engineContainer0(t, helmRun(t, with("vllmConfig.image", "lmcache/vllm-openai:v0.3.5", "vllmConfig.engineVersion", "0.8.4", "vllmConfig.enableChunkedPrefill", false)), "engine-m")
			helmEqual(t, "args", oldArgs("--enable-chunked-prefill=false"), c.Args)
		},

		"`servingEngineSpec.imagePullPolicy`, `modelSpec[].imagePullSecret`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("vllmConfig.imagePullPolicy", "IfNotPresent", "vllmConfig.imagePullSecretName", "regcred")), "engine-m").Spec.Template.Spec
			helmEqual(t, "imagePullPolicy", corev1.PullIfNotPresent, pod.Containers[0].ImagePullPolicy)
			helmEqual(t, "imagePullSecrets", []corev1.LocalObjectReference{{Name: "regcred"}}, pod.ImagePullSecrets)
			helmEqual(t, "default imagePullPolicy", corev1.PullPolicy(""), engineContainer0(t, helmRun(t, minimalXR()), "engine-m").ImagePullPolicy)
		},

		"`modelSpec[].modelRevision`": func(t *testing.T) {
			c := engineContainer0(t, helmRun(t, with("model.revision", "0cb88a4f764b7a12671c53f0838cd831a0843b95")), "engine-m")
			helmEqual(t, "args", []string{"org/m", "--revision=0cb88a4f764b7a12671c53f0838cd831a0843b95", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}, c.Args)
			helmFatal(t, with("model.revision", "--trust-remote-code"),
				helmInvalid+`spec.model.revision "--trust-remote-code" is invalid: use a branch, tag or commit of the model's repository, such as main or a commit hash (letters, digits, '.', '_', '-' and '/', starting with a letter or digit)`)
		},

		"`modelSpec[].modelURL`": func(t *testing.T) {
			c := engineContainer0(t, helmRun(t, with("model.modelURL", "mistralai/Mistral-7B-Instruct-v0.2")), "engine-m")
			helmEqual(t, "args", []string{"mistralai/Mistral-7B-Instruct-v0.2", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}, c.Args)
		},

		"`modelSpec[].replicaCount`": func(t *testing.T) {
			xr := with("replicas", 2, "storage.accessModes", []any{"ReadWriteMany"})
			helmEqual(t, "replicas", ptr.To(int32(2)), helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Replicas)
		},

		"`modelSpec[].requestCPU`, `requestMemory`, `requestGPU`, `requestGPUType`": func(t *testing.T) {
			xr := with("resources", map[string]any{"cpu": "6", "memory": "16Gi", "gpu": "1", "gpuType": "nvidia.com/mig-4g.71gb"})
			c := engineContainer0(t, helmRun(t, xr), "engine-m")
			helmEqual(t, "requests", corev1.ResourceList{"cpu": helmQ("6"), "memory": helmQ("16Gi"), "nvidia.com/mig-4g.71gb": helmQ("1")}, c.Resources.Requests)
		},

		"`modelSpec[].limitCPU`, `limitMemory`, `resources`": func(t *testing.T) {
			c := engineContainer0(t, helmRun(t, with("resources", map[string]any{"cpu": "6", "memory": "16Gi", "gpu": "1"})), "engine-m")
			helmEqual(t, "resources without limits", corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": helmQ("6"), "memory": helmQ("16Gi"), "nvidia.com/gpu": helmQ("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": helmQ("1")},
			}, c.Resources)
			c = engineContainer0(t, helmRun(t, with("resources", map[string]any{"cpu": "6", "cpuLimit": "8", "memory": "16Gi", "memoryLimit": "32Gi", "gpu": "1"})), "engine-m")
			helmEqual(t, "resources with limits", corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": helmQ("6"), "memory": helmQ("16Gi"), "nvidia.com/gpu": helmQ("1")},
				Limits:   corev1.ResourceList{"cpu": helmQ("8"), "memory": helmQ("32Gi"), "nvidia.com/gpu": helmQ("1")},
			}, c.Resources)
			helmFatal(t, with("resources.limits", map[string]any{"memory": "32Gi"}), helmUnknownField("spec.resources.limits"))
		},

		"`modelSpec[].requestGPUMem`, `requestGPUMemPercentage`, `requestGPUCores`, `limitGPUMem`, `limitGPUMemPercentage`, `limitGPUCores`": func(t *testing.T) {
			c := engineContainer0(t, helmRun(t, with("resources", map[string]any{"gpu": "1", "gpuType": "nvidia.com/gpu"})), "engine-m")
			one := corev1.ResourceList{"nvidia.com/gpu": helmQ("1")}
			helmEqual(t, "one extended resource", corev1.ResourceRequirements{Requests: one, Limits: one}, c.Resources)
			helmFatal(t, with("resources.gpuMem", "3000"), helmUnknownField("spec.resources.gpuMem"))
		},

		"`modelSpec[].pvcStorage`, `storageClass`, `pvcAccessMode`": func(t *testing.T) {
			rsp := helmRun(t, with("storage", map[string]any{"size": "100Gi", "storageClassName": "fast-ssd", "accessModes": []any{"ReadWriteMany"}}))
			pvc := desired(t, rsp, "engine-m-storage", &corev1.PersistentVolumeClaim{})
			helmEqual(t, "claim name", "s-m-storage-claim", pvc.Name)
			helmEqual(t, "claim spec", corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": helmQ("100Gi")}},
				StorageClassName: ptr.To("fast-ssd"),
			}, pvc.Spec)
			pod := helmDeployment(t, rsp, "engine-m").Spec.Template.Spec
			helmEqual(t, "volumes", []corev1.Volume{helmModelCacheVolume}, pod.Volumes)
			helmEqual(t, "mounts", []corev1.VolumeMount{helmModelCacheMount}, pod.Containers[0].VolumeMounts)
			// The chart's storageClass: "" binds a pre-made volume without a
			// class; "" is kept, also over the Input's default class.
			in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "storage": map[string]any{"storageClassName": "fast"}}
			static := desired(t, mustRun(t, req(t, with("storage.storageClassName", ""), in, nil)), "engine-m-storage", &corev1.PersistentVolumeClaim{})
			helmEqual(t, `storageClassName ""`, ptr.To(""), static.Spec.StorageClassName)
			unset := desired(t, mustRun(t, req(t, minimalXR(), nil, nil)), "engine-m-storage", &corev1.PersistentVolumeClaim{})
			helmEqual(t, "storageClassName unset", (*string)(nil), unset.Spec.StorageClassName)
		},

		"`modelSpec[].pvcStorage.emptyDir`": func(t *testing.T) {
			rsp := helmRun(t, with("storage.emptyDir.sizeLimit", "100Gi"))
			pod := helmDeployment(t, rsp, "engine-m").Spec.Template.Spec
			helmEqual(t, "volumes", []corev1.Volume{{Name: "s-storage", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(helmQ("100Gi"))}}}}, pod.Volumes)
			helmEqual(t, "no claim", false, slices.Contains(keys(rsp), "engine-m-storage"))
		},

		"`modelSpec[].pvcExistingClaimName`": func(t *testing.T) {
			rsp := helmRun(t, with("storage.existingClaimName", "models-gitops"))
			pod := helmDeployment(t, rsp, "engine-m").Spec.Template.Spec
			vol := *helmModelCacheVolume.DeepCopy()
			vol.PersistentVolumeClaim.ClaimName = "models-gitops"
			helmEqual(t, "volumes", []corev1.Volume{vol}, pod.Volumes)
			helmEqual(t, "mounts", []corev1.VolumeMount{helmModelCacheMount}, pod.Containers[0].VolumeMounts)
			helmEqual(t, "no claim of the stack's", false, slices.Contains(keys(rsp), "engine-m-storage"))
		},

		"`modelSpec[].pvcMatchLabels`": func(t *testing.T) {
			rsp := helmRun(t, with("storage.existingClaimName", "models-on-nfs"))
			helmEqual(t, "volumes", []corev1.Volume{{Name: "s-storage", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models-on-nfs"}}}},
				helmDeployment(t, rsp, "engine-m").Spec.Template.Spec.Volumes)
			helmEqual(t, "no claim of the stack's", false, slices.Contains(keys(rsp), "engine-m-storage"))
			own := desired(t, helmRun(t, minimalXR()), "engine-m-storage", &corev1.PersistentVolumeClaim{})
			helmEqual(t, "the stack's claim has no selector", (*metav1.LabelSelector)(nil), own.Spec.Selector)
		},

		"`modelSpec[].pvcLabels`, `pvcAnnotations`": func(t *testing.T) {
			pvc := desired(t, helmRun(t, minimalXR()), "engine-m-storage", &corev1.PersistentVolumeClaim{})
			helmEqual(t, "claim labels", helmEngineLabels(), pvc.Labels)
			helmEqual(t, "claim annotations", map[string]string(nil), pvc.Annotations)
		},

		"`modelSpec[].extraVolumes`, `extraVolumeMounts`": func(t *testing.T) {
			xr := with("storage.extraVolumes", []any{map[string]any{"name": "tmp-volume", "emptyDir": map[string]any{"sizeLimit": "5Gi"}}},
				"storage.extraVolumeMounts", []any{map[string]any{"name": "tmp-volume", "mountPath": "/tmp"}})
			pod := helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Template.Spec
			helmEqual(t, "volumes", []corev1.Volume{helmModelCacheVolume,
				{Name: "tmp-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(helmQ("5Gi"))}}}}, pod.Volumes)
			helmEqual(t, "mounts", []corev1.VolumeMount{helmModelCacheMount, {Name: "tmp-volume", MountPath: "/tmp"}}, pod.Containers[0].VolumeMounts)
			// A chart values file's mount of the model cache volume, by the
			// chart's name.
			hub := corev1.VolumeMount{Name: "s-storage", MountPath: "/hub", SubPath: "hub"}
			pod = helmDeployment(t, helmRun(t, with("storage.extraVolumeMounts", []any{map[string]any{"name": "s-storage", "mountPath": "/hub", "subPath": "hub"}})), "engine-m").Spec.Template.Spec
			helmEqual(t, "mount of the chart's volume", []corev1.VolumeMount{helmModelCacheMount, hub}, pod.Containers[0].VolumeMounts)
		},

		"`sharedPvcStorage.*`": func(t *testing.T) {
			xr := with("model", nil,
				"storage.extraVolumes", []any{map[string]any{"name": "s-shared-pvc-storage", "persistentVolumeClaim": map[string]any{"claimName": "s-shared-pvc-storage-claim"}}},
				"storage.extraVolumeMounts", []any{map[string]any{"name": "s-shared-pvc-storage", "mountPath": "/data/shared-pvc-storage"}},
				"env", []any{map[string]any{"name": "HF_HOME", "value": "/data/shared-pvc-storage"}},
				"models", helmModels(map[string]any{"name": "a", "modelURL": "org/a"}, map[string]any{"name": "b", "modelURL": "org/b"}))
			rsp := helmRun(t, xr)
			for _, m := range []string{"a", "b"} {
				pod := helmDeployment(t, rsp, "engine-"+m).Spec.Template.Spec
				helmEqual(t, m+" volumes", []corev1.Volume{
					{Name: "s-storage", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "s-" + m + "-storage-claim"}}},
					{Name: "s-shared-pvc-storage", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "s-shared-pvc-storage-claim"}}},
				}, pod.Volumes)
				helmEqual(t, m+" mounts", []corev1.VolumeMount{helmModelCacheMount, {Name: "s-shared-pvc-storage", MountPath: "/data/shared-pvc-storage"}}, pod.Containers[0].VolumeMounts)
				helmEqual(t, m+" env", engineEnvOf("HF_HOME", "/data/shared-pvc-storage"), pod.Containers[0].Env)
			}
		},

		"`modelSpec[].initContainer.*`": func(t *testing.T) {
			xr := with("pod.initContainers", []any{map[string]any{
				"name": "init", "image": "busybox:1.37", "command": []any{"sh", "-c"}, "args": []any{"ls /data"},
				"volumeMounts": []any{map[string]any{"name": "s-storage", "mountPath": "/data"}},
			}})
			helmEqual(t, "initContainers", []corev1.Container{{
				Name: "init", Image: "busybox:1.37", Command: []string{"sh", "-c"}, Args: []string{"ls /data"},
				VolumeMounts: []corev1.VolumeMount{helmModelCacheMount},
			}}, helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Template.Spec.InitContainers)
		},

		"`modelSpec[].vllmConfig.{enableChunkedPrefill, enablePrefixCaching, tensorParallelSize, gpuMemoryUtilization, maxLoras, extraArgs}`": func(t *testing.T) {
			xr := with("model.enableLoRA", true, "resources.gpu", "2", "vllmConfig", map[string]any{
				"enableChunkedPrefill": true, "enablePrefixCaching": false, "tensorParallelSize": 2,
				"gpuMemoryUtilization": "0.9", "maxLoras": 4, "extraArgs": []any{"--disable-log-requests"},
			})
			helmEqual(t, "args", args("--enable-lora", "--enable-chunked-prefill", "--no-enable-prefix-caching", "--tensor-parallel-size=2",
				"--gpu-memory-utilization=0.9", "--max-loras=4", "--disable-log-requests"), engineContainer0(t, helmRun(t, xr), "engine-m").Args)
			helmEqual(t, "unset switches pass nothing", baseArgs, engineContainer0(t, helmRun(t, minimalXR()), "engine-m").Args)
		},

		"`modelSpec[].vllmConfig.{maxModelLen, dtype, maxNumSeqs}`": func(t *testing.T) {
			xr := with("model.maxModelLen", 16384, "model.dtype", "bfloat16", "model.maxNumSeqs", 32)
			helmEqual(t, "args", args("--dtype=bfloat16", "--max-num-seqs=32", "--max-model-len=16384"),
				engineContainer0(t, helmRun(t, xr), "engine-m").Args)
		},

		"`modelSpec[].vllmConfig.v0`": func(t *testing.T) {
			// The V0 engine and its LMCache connector exist up to vLLM 0.10.0,
			// and need an image whose LMCache still has lmcache.experimental
			// (vLLM's own images have none): VLLM_RPC_TIMEOUT is the V0
			// engine's, so only it gets the chart's value.
			c := engineContainer0(t, helmRun(t, with("vllmConfig.v1", false, "lmcacheConfig.enabled", true, "vllmConfig.engineVersion", "0.10.0", "vllmConfig.image", "lmcache/vllm-openai:2025-04-18")), "engine-m")
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "VLLM_USE_V1", "0", "LMCACHE_USE_EXPERIMENTAL", "True", "VLLM_RPC_TIMEOUT", "1000000", "LMCACHE_LOG_LEVEL", "INFO"), c.Env)
			helmEqual(t, "args", oldArgs("--kv-transfer-config", `{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}`), c.Args)
		},

		"`modelSpec[].vllmConfig.v1`": func(t *testing.T) {
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "VLLM_USE_V1", "1"),
				engineContainer0(t, helmRun(t, with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.11.0")), "engine-m").Env)
			helmEqual(t, "env of a vLLM that no longer reads it", engineEnvOf("HF_HOME", "/data"),
				engineContainer0(t, helmRun(t, with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.11.1")), "engine-m").Env)
		},

		"`modelSpec[].vllmConfig.{runner, convert}`": func(t *testing.T) {
			xr := with("vllmConfig.extraArgs", []any{"--runner", "pooling", "--convert", "embed"})
			helmEqual(t, "args", args("--runner", "pooling", "--convert", "embed"), engineContainer0(t, helmRun(t, xr), "engine-m").Args)
		},

		"`modelSpec[].vllmConfig.prometheusMultiprocDir`": func(t *testing.T) {
			helmEqual(t, "default env", withPodIP(hfHome...), engineContainer0(t, helmRun(t, minimalXR()), "engine-m").Env)
			xr := with("env", []any{map[string]any{"name": "PROMETHEUS_MULTIPROC_DIR", "value": "/tmp/prometheus"}})
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "PROMETHEUS_MULTIPROC_DIR", "/tmp/prometheus"), engineContainer0(t, helmRun(t, xr), "engine-m").Env)
		},

		"`modelSpec[].lmcacheConfig.{enabled, cpuOffloadingBufferSize, diskOffloadingBufferSize}`": func(t *testing.T) {
			xr := with("resources.memory", "70Gi", "lmcacheConfig", map[string]any{"enabled": true, "cpuOffloadingBufferSize": "60", "diskOffloadingBufferSize": "512Mi"})
			c := engineContainer0(t, helmRun(t, xr), "engine-m")
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO",
				"LMCACHE_LOCAL_CPU", "True", "LMCACHE_MAX_LOCAL_CPU_SIZE", "60",
				"LMCACHE_LOCAL_DISK", "file:///data/lmcache/", "LMCACHE_MAX_LOCAL_DISK_SIZE", "0.5"), c.Env)
			helmEqual(t, "args", args("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`), c.Args)
			// The chart's VLLM_RPC_TIMEOUT only where the V0 engine runs, the
			// one reader (v1: false, on an LMCache image of that era).
			stacktest.SetPath(xr, "spec.vllmConfig.v1", false)
			stacktest.SetPath(xr, "spec.vllmConfig.image", "lmcache/vllm-openai:2025-04-18")
			stacktest.SetPath(xr, "spec.vllmConfig.engineVersion", "0.8.4")
			v0 := engineContainer0(t, helmRun(t, xr), "engine-m")
			helmEqual(t, "env on the V0 engine", engineEnvOf("HF_HOME", "/data", "VLLM_USE_V1", "0", "LMCACHE_USE_EXPERIMENTAL", "True", "VLLM_RPC_TIMEOUT", "1000000", "LMCACHE_LOG_LEVEL", "INFO",
				"LMCACHE_LOCAL_CPU", "True", "LMCACHE_MAX_LOCAL_CPU_SIZE", "60",
				"LMCACHE_LOCAL_DISK", "file:///data/lmcache/", "LMCACHE_MAX_LOCAL_DISK_SIZE", "0.5"), v0.Env)
		},

		"`modelSpec[].lmcacheConfig.logLevel`": func(t *testing.T) {
			xr := with("lmcacheConfig.enabled", true, "env", []any{map[string]any{"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"}})
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "DEBUG"),
				engineContainer0(t, helmRun(t, xr), "engine-m").Env)
		},

		"`modelSpec[].lmcacheConfig.{enableController, instanceId, controllerPort}`": func(t *testing.T) {
			xr := with("model", nil, "routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true,
				"models", helmModels(map[string]any{"name": "a", "modelURL": "org/a", "replicas": 2, "storage": map[string]any{"accessModes": []any{"ReadWriteMany"}}},
					map[string]any{"name": "b", "modelURL": "org/b"}))
			rsp := helmRun(t, xr)
			want := slices.Concat(helmLMCacheEnv, helmKVAwareEnv("9000", "9001", "8001", "10"))
			for _, m := range []string{"a", "b"} {
				helmEqual(t, m+" env", want, engineContainer0(t, rsp, "engine-"+m).Env)
			}
			helmFatal(t, with("routerConfig.routerType", "kvaware"), helmMsgKVAwareNeedsLMCache)
		},

		"`modelSpec[].lmcacheConfig.{workerPort, workerPorts}`": func(t *testing.T) {
			xr := with("routerConfig.routerType", "kvaware", "resources.gpu", "2", "vllmConfig.tensorParallelSize", 2,
				"lmcacheConfig", map[string]any{"enabled": true, "workerPort": 8101})
			c := engineContainer0(t, helmRun(t, xr), "engine-m")
			helmEqual(t, "env", slices.Concat(helmLMCacheEnv, helmKVAwareEnv("9000", "9001", "8101,8102", "10")), c.Env)
			helmEqual(t, "ports", []corev1.ContainerPort{
				{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
				{Name: "lmcache-worker", ContainerPort: 8101, Protocol: corev1.ProtocolTCP},
			}, c.Ports)
		},

		"`modelSpec[].lmcacheConfig.{controllerReplyPort, workerHeartbeatTime}`": func(t *testing.T) {
			xr := with("routerConfig.routerType", "kvaware", "routerConfig.lmcacheControllerReplyPort", 9201, "lmcacheConfig", map[string]any{"enabled": true, "workerHeartbeatTime": 15})
			helmEqual(t, "env", slices.Concat(helmLMCacheEnv, helmKVAwareEnv("9000", "9201", "8001", "15")), engineContainer0(t, helmRun(t, xr), "engine-m").Env)
			helmFatal(t, with("routerConfig.routerType", "kvaware", "lmcacheConfig", map[string]any{"enabled": true, "workerHeartbeatTime": 30}),
				helmInvalid+"spec.lmcacheConfig.workerHeartbeatTime 30 is invalid: must be from 1 to 29 seconds, below the 30 seconds after which the LMCache controller drops a silent worker")
		},

		"`modelSpec[].lmcacheConfig.{p2pHost, p2pInitPorts, cudaVisibleDevices}`": func(t *testing.T) {
			// POD_IP, which the chart sets too, comes first, so $(POD_IP)
			// expands in a user's variable.
			xr := with("lmcacheConfig.enabled", true, "env", []any{
				map[string]any{"name": "LMCACHE_P2P_INIT_PORTS", "value": "8200"},
				map[string]any{"name": "LMCACHE_P2P_HOST", "value": "$(POD_IP)"},
			})
			c := engineContainer0(t, helmRun(t, xr), "engine-m")
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO",
				"LMCACHE_P2P_INIT_PORTS", "8200", "LMCACHE_P2P_HOST", "$(POD_IP)"), c.Env)
			helmEqual(t, "LMCACHE_P2P_HOST in the pod", "10.1.2.3", expandEnv(c.Env, map[string]string{"status.podIP": "10.1.2.3"})["LMCACHE_P2P_HOST"])
		},

		"`modelSpec[].lmcacheConfig.{enablePD, kvRole, enableNixl, nixl*}`": func(t *testing.T) {
			helmFatal(t, with("routerConfig.routerType", "disaggregated_prefill"), helmMsgDisaggregatedPrefill)
			helmFatal(t, with("lmcacheConfig.enablePD", true), helmUnknownField("spec.lmcacheConfig.enablePD"))
		},

		"`modelSpec[].hf_token`": func(t *testing.T) {
			xr := with("vllmConfig.hfTokenSecret", map[string]any{"name": "hf-token", "key": "hf_token"})
			helmEqual(t, "env", append(engineEnvOf("HF_HOME", "/data"), secretEnvVar("HF_TOKEN", "hf-token", "hf_token")), engineContainer0(t, helmRun(t, xr), "engine-m").Env)
			helmFatal(t, with("vllmConfig.hfTokenSecret", "hf_xxxxxxxx"), helmMsgHFTokenLiteral)
		},

		"`modelSpec[].env`": func(t *testing.T) {
			xr := with("model", nil,
				"env", []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "HF_HOME", "value": "/cache"}},
				"models", helmModels(map[string]any{"name": "m", "modelURL": "org/m", "env": []any{map[string]any{"name": "A", "value": "2"}}},
					map[string]any{"name": "n", "modelURL": "org/n"}))
			rsp := helmRun(t, xr)
			helmEqual(t, "m env", engineEnvOf("HF_HOME", "/cache", "A", "2"), engineContainer0(t, rsp, "engine-m").Env)
			helmEqual(t, "n env", engineEnvOf("HF_HOME", "/cache", "A", "1"), engineContainer0(t, rsp, "engine-n").Env)
		},

		"`servingEngineSpec.env`": func(t *testing.T) {
			rsp := helmRun(t, with("model", nil, "env", []any{map[string]any{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}},
				"models", helmModels(map[string]any{"name": "m", "modelURL": "org/m"}, map[string]any{"name": "n", "modelURL": "org/n"})))
			for _, m := range []string{"m", "n"} {
				helmEqual(t, m+" env", engineEnvOf("HF_HOME", "/data", "VLLM_LOGGING_LEVEL", "DEBUG"), engineContainer0(t, rsp, "engine-"+m).Env)
			}
		},

		"`modelSpec[].envFromSecret`, `servingEngineSpec.configs`": func(t *testing.T) {
			xr := with("envFrom", []any{
				map[string]any{"secretRef": map[string]any{"name": "s3-registry"}},
				map[string]any{"configMapRef": map[string]any{"name": "vllm-configs"}},
			})
			helmEqual(t, "envFrom", []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-registry"}}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vllm-configs"}}},
			}, engineContainer0(t, helmRun(t, xr), "engine-m").EnvFrom)
		},

		"`modelSpec[].serviceAccountName`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("pod.serviceAccountName", "vllm")), "engine-m").Spec.Template.Spec
			helmEqual(t, "identity", []any{"vllm", ptr.To(false)}, []any{pod.ServiceAccountName, pod.AutomountServiceAccountToken})
		},

		"`modelSpec[].podAnnotations`, `annotations`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, with("pod.annotations", map[string]any{"prometheus.io/scrape": "true"})), "engine-m")
			helmEqual(t, "pod annotations", map[string]string{"prometheus.io/scrape": "true"}, d.Spec.Template.Annotations)
			helmEqual(t, "Deployment annotations", map[string]string(nil), d.Annotations)
		},

		"`modelSpec[].podLabels`, `labels`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, with("model", nil,
				"models", helmModels(map[string]any{"name": "m", "modelURL": "org/m", "pod": map[string]any{"labels": map[string]any{"team": "search"}}}))), "engine-m")
			want := helmEngineLabels()
			want["team"] = "search"
			helmEqual(t, "pod labels", want, d.Spec.Template.Labels)
			helmEqual(t, "Deployment labels", helmEngineLabels(), d.Labels)
		},

		"`modelSpec[].serviceAnnotations`": func(t *testing.T) {
			rsp := helmRun(t, with("model", nil, "service.annotations", map[string]any{"example.com/owner": "ml-platform"},
				"models", helmModels(map[string]any{"name": "m", "modelURL": "org/m", "service": map[string]any{"annotations": map[string]any{"consul.hashicorp.com/service-sync": "true"}}},
					map[string]any{"name": "n", "modelURL": "org/n"})))
			helmEqual(t, "m Service annotations", map[string]string{"consul.hashicorp.com/service-sync": "true"}, desired(t, rsp, "engine-m-service", &corev1.Service{}).Annotations)
			helmEqual(t, "n Service annotations", map[string]string{"example.com/owner": "ml-platform"}, desired(t, rsp, "engine-n-service", &corev1.Service{}).Annotations)
			helmFatal(t, with("service.annotations", map[string]any{"owner!": "me"}), helmInvalid+`spec.service.annotations key "owner!" is invalid: `+
				`name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character `+
				`(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`)
		},

		"`servingEngineSpec.runtimeClassName`, `schedulerName`, `tolerations`, `modelSpec[].runtimeClassName`, `priorityClassName`": func(t *testing.T) {
			xr := with("scheduling", map[string]any{
				"runtimeClassName": "nvidia", "schedulerName": "volcano", "priorityClassName": "inference-high",
				"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
			})
			pod := helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Template.Spec
			helmEqual(t, "scheduling", corev1.PodSpec{
				RuntimeClassName: ptr.To("nvidia"), SchedulerName: "volcano", PriorityClassName: "inference-high",
				Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			}, corev1.PodSpec{RuntimeClassName: pod.RuntimeClassName, SchedulerName: pod.SchedulerName, PriorityClassName: pod.PriorityClassName, Tolerations: pod.Tolerations})
			helmEqual(t, "no runtime class by default", (*string)(nil), helmDeployment(t, helmRun(t, minimalXR()), "engine-m").Spec.Template.Spec.RuntimeClassName)
		},

		"`modelSpec[].tolerations`, `tolerationsPolicy`": func(t *testing.T) {
			gpu := map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
			dedicated := map[string]any{"key": "dedicated", "operator": "Equal", "value": "gpu-model-a", "effect": "NoSchedule"}
			xr := with("model", nil, "scheduling.tolerations", []any{gpu},
				"models", helmModels(map[string]any{"name": "m", "modelURL": "org/m", "scheduling": map[string]any{"tolerations": []any{dedicated}}},
					map[string]any{"name": "n", "modelURL": "org/n"}))
			rsp := helmRun(t, xr)
			helmEqual(t, "m tolerations", []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu-model-a", Effect: corev1.TaintEffectNoSchedule}},
				helmDeployment(t, rsp, "engine-m").Spec.Template.Spec.Tolerations)
			helmEqual(t, "n tolerations", []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				helmDeployment(t, rsp, "engine-n").Spec.Template.Spec.Tolerations)
		},

		"`modelSpec[].affinity`, `nodeSelectorTerms`": func(t *testing.T) {
			xr := with("scheduling.affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "nvidia.com/gpu.product", "operator": "In", "values": []any{"NVIDIA-RTX-A6000"}}}}},
			}}})
			helmEqual(t, "affinity", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{"NVIDIA-RTX-A6000"}}}}},
			}}}, helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Template.Spec.Affinity)
		},

		"`modelSpec[].nodeName`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("scheduling.nodeSelector", map[string]any{"kubernetes.io/hostname": "gpu-node-1"})), "engine-m").Spec.Template.Spec
			helmEqual(t, "placement", []any{map[string]string{"kubernetes.io/hostname": "gpu-node-1"}, ""}, []any{pod.NodeSelector, pod.NodeName})
			helmFatal(t, with("scheduling.nodeName", "gpu-node-1"), helmUnknownField("spec.scheduling.nodeName"))
		},

		"`modelSpec[].shmSize`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("storage.shmSize", "32Gi")), "engine-m").Spec.Template.Spec
			helmEqual(t, "volumes", []corev1.Volume{helmModelCacheVolume, {Name: "shm", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(helmQ("32Gi"))}}}}, pod.Volumes)
			helmEqual(t, "mounts", []corev1.VolumeMount{helmModelCacheMount, {Name: "shm", MountPath: "/dev/shm"}}, pod.Containers[0].VolumeMounts)
		},

		"`modelSpec[].chatTemplate`, `chatTemplateConfigMap`": func(t *testing.T) {
			const tmpl = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
			rsp := helmRun(t, with("model.chatTemplate", tmpl))
			cm := desired(t, rsp, "engine-m-chat-template", &corev1.ConfigMap{})
			helmEqual(t, "ConfigMap", []any{"s-m-chat-templates", map[string]string{"chat-template.jinja": tmpl}}, []any{cm.Name, cm.Data})
			helmEqual(t, "args", args("--chat-template", "/templates/chat-template.jinja"), engineContainer0(t, rsp, "engine-m").Args)
		},

		"`modelSpec[].enableLoRA`, `enableTool`, `toolCallParser`": func(t *testing.T) {
			xr := with("model.enableLoRA", true, "model.enableTool", true, "model.toolCallParser", "hermes")
			helmEqual(t, "args", args("--enable-lora", "--enable-auto-tool-choice", "--tool-call-parser=hermes"), engineContainer0(t, helmRun(t, xr), "engine-m").Args)
		},

		"`modelSpec[].keda.{enabled, minReplicaCount, maxReplicaCount, pollingInterval, cooldownPeriod, idleReplicaCount, fallback}`": func(t *testing.T) {
			xr := with("autoscaling", map[string]any{"type": "keda", "minReplicas": 1, "maxReplicas": 5, "pollingInterval": 30, "cooldownPeriod": 600,
				"idleReplicas": 0, "fallback": map[string]any{"failureThreshold": 3, "replicas": 2},
				"prometheusAddress": "http://prometheus-operated.monitoring.svc:9090"})
			rsp := helmRun(t, xr)
			if v, sent := specReplicas(t, rsp, "engine-m"); sent {
				t.Errorf("spec.replicas = %v is sent, but KEDA owns the replicas", v)
			}
			so := objectMap(t, rsp, "engine-m-scaledobject")
			helmEqual(t, "ScaledObject", []any{"keda.sh/v1alpha1", "ScaledObject", "s-m-scaledobject"},
				[]any{so["apiVersion"], so["kind"], so["metadata"].(map[string]any)["name"]})
			spec := so["spec"].(map[string]any)
			delete(spec, "triggers")
			helmEqual(t, "ScaledObject spec", map[string]any{
				"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "s-m-deployment-vllm"},
				"minReplicaCount": float64(1), "maxReplicaCount": float64(5), "idleReplicaCount": float64(0),
				"pollingInterval": float64(30), "cooldownPeriod": float64(600),
				"fallback": map[string]any{"failureThreshold": float64(3), "replicas": float64(2)},
			}, spec)
		},

		"`modelSpec[].keda.triggers`": func(t *testing.T) {
			trigger := func(xr map[string]any) any {
				rsp := helmRun(t, xr)
				return objectMap(t, rsp, "engine-m-scaledobject")["spec"].(map[string]any)["triggers"]
			}
			prom := "http://prometheus-operated.monitoring.svc:9090"
			helmEqual(t, "default trigger", []any{map[string]any{"type": "prometheus", "metadata": map[string]any{
				"serverAddress": prom, "query": `sum(vllm:num_requests_waiting{model_name="org/m",namespace="llm"})`, "threshold": "5"}}},
				trigger(with("autoscaling", map[string]any{"maxReplicas": 5, "prometheusAddress": prom})))
			helmEqual(t, "own query", []any{map[string]any{"type": "prometheus", "metadata": map[string]any{
				"serverAddress": prom, "query": "vllm:num_requests_waiting", "threshold": "10"}}},
				trigger(with("autoscaling", map[string]any{"maxReplicas": 5, "prometheusAddress": prom, "query": "vllm:num_requests_waiting", "threshold": "10"})))
		},

		"`modelSpec[].keda.{initialCooldownPeriod, advanced}`": func(t *testing.T) {
			behavior := map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(300),
				"policies": []any{map[string]any{"type": "Percent", "value": int64(50), "periodSeconds": int64(60)}}}}
			rsp := helmRun(t, with("autoscaling", map[string]any{"maxReplicas": 5, "prometheusAddress": "http://prometheus:9090",
				"initialCooldownPeriod": 120, "behavior": behavior}))
			spec := objectMap(t, rsp, "engine-m-scaledobject")["spec"].(map[string]any)
			var fields []string
			for k := range spec {
				fields = append(fields, k)
			}
			slices.Sort(fields)
			helmEqual(t, "ScaledObject spec fields", []string{"advanced", "cooldownPeriod", "initialCooldownPeriod", "maxReplicaCount", "minReplicaCount", "pollingInterval", "scaleTargetRef", "triggers"}, fields)
			helmEqual(t, "initialCooldownPeriod", float64(120), spec["initialCooldownPeriod"])
			helmEqual(t, "advanced", map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": map[string]any{"scaleDown": map[string]any{
				"stabilizationWindowSeconds": float64(300), "policies": []any{map[string]any{"type": "Percent", "value": float64(50), "periodSeconds": float64(60)}}}}}},
				spec["advanced"])
		},

		"`modelSpec[].pdb.*`": func(t *testing.T) {
			pdb := desired(t, helmRun(t, with("podDisruptionBudget.maxUnavailable", 1)), "engine-m-pdb-vllm", &policyv1.PodDisruptionBudget{})
			helmEqual(t, "name", "s-m-pdb-vllm", pdb.Name)
			helmEqual(t, "spec", policyv1.PodDisruptionBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "m", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine"}},
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			}, pdb.Spec)
			helmEqual(t, "metadata", []any{helmEngineLabels(), map[string]string(nil)}, []any{pdb.Labels, pdb.Annotations})
			helmEqual(t, "enabled: false", false, slices.Contains(keys(helmRun(t, with("podDisruptionBudget", map[string]any{"enabled": false}))), "engine-m-pdb-vllm"))
		},

		"`modelSpec[].raySpec.*`, `vllmConfig.pipelineParallelSize`": func(t *testing.T) {
			helmFatal(t, with("vllmConfig.tensorParallelSize", 8, "resources.gpu", "4"),
				helmInvalid+`spec: vllmConfig.tensorParallelSize 8 needs 8 GPUs but resources.gpu is "4": raise resources.gpu or lower tensorParallelSize`)
			helmFatal(t, with("model", nil, "models", helmModels(map[string]any{"name": "m", "modelURL": "org/m", "raySpec": map[string]any{"enabled": true}})),
				helmUnknownField("spec.models[0].raySpec"))
			helmFatal(t, with("vllmConfig.pipelineParallelSize", 2),
				helmInvalid+`spec: vllmConfig.tensorParallelSize 1 × pipelineParallelSize 2 needs 2 GPUs but resources.gpu is "1": raise resources.gpu, lower the two, or spread each replica over nodes with multiNode`)
			c := engineContainer0(t, helmRun(t, with("vllmConfig.pipelineParallelSize", 2, "resources.gpu", "2")), "engine-m")
			helmEqual(t, "pipeline parallel arg", true, slices.Contains(c.Args, "--pipeline-parallel-size=2"))
		},

		"`servingEngineSpec.labels`": func(t *testing.T) {
			rsp := helmRun(t, with("pod.labels", map[string]any{"environment": "test", "release": "test"}))
			wantLabels := helmEngineLabels()
			wantLabels["environment"], wantLabels["release"] = "test", "test"
			helmEqual(t, "engine pod labels", wantLabels, helmDeployment(t, rsp, "engine-m").Spec.Template.Labels)
			helmEqual(t, "router args", helmRouterArgs("--routing-logic=roundrobin"), helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0].Args)
			other := with("pod.labels", map[string]any{"environment": "test", "release": "test"})
			stacktest.SetPath(other, "metadata.name", "t")
			otherArgs := helmDeployment(t, helmRun(t, other), "router").Spec.Template.Spec.Containers[0].Args
			otherSel, _ := stacktest.ArgValue(otherArgs, "--k8s-label-selector")
			helmEqual(t, "another stack's selector", "app.kubernetes.io/instance=t,app.kubernetes.io/component=serving-engine", otherSel)
		},

		"`servingEngineSpec.extraPorts`, `routerSpec.extraPorts`": func(t *testing.T) {
			rsp := helmRun(t, minimalXR())
			helmEqual(t, "engine Service ports", []corev1.ServicePort{{Name: "service-port", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)}},
				desired(t, rsp, "engine-m-service", &corev1.Service{}).Spec.Ports)
			helmEqual(t, "router Service ports", []corev1.ServicePort{{Name: "router-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)}},
				desired(t, rsp, "router-service", &corev1.Service{}).Spec.Ports)
		},

		"`servingEngineSpec.containerPort`, `servicePort`, `routerSpec.containerPort`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.service.port", 8080))
			helmEqual(t, "engine container ports", []corev1.ContainerPort{{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}},
				engineContainer0(t, rsp, "engine-m").Ports)
			helmEqual(t, "engine Service ports", []corev1.ServicePort{{Name: "service-port", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)}},
				desired(t, rsp, "engine-m-service", &corev1.Service{}).Spec.Ports)
			helmEqual(t, "router container ports", []corev1.ContainerPort{{Name: "router-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}},
				helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0].Ports)
			helmEqual(t, "router Service ports", []corev1.ServicePort{{Name: "router-sport", Port: 8080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)}},
				desired(t, rsp, "router-service", &corev1.Service{}).Spec.Ports)
		},

		"`servingEngineSpec.strategy`": func(t *testing.T) {
			helmEqual(t, "Recreate", appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				helmDeployment(t, helmRun(t, with("deploymentStrategy", "Recreate")), "engine-m").Spec.Strategy)
			helmEqual(t, "rollingUpdate", appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("100%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				helmDeployment(t, helmRun(t, with("rollingUpdate.maxSurge", "100%")), "engine-m").Spec.Strategy)
			helmEqual(t, "default", appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				helmDeployment(t, helmRun(t, minimalXR()), "engine-m").Spec.Strategy)
		},

		"`servingEngineSpec.{startupProbe, readinessProbe, livenessProbe}`": func(t *testing.T) {
			xr := with("probes", map[string]any{"startup": map[string]any{"initialDelaySeconds": 15, "failureThreshold": 120},
				"readiness": map[string]any{"initialDelaySeconds": 15}, "liveness": map[string]any{"timeoutSeconds": 5}})
			c := engineContainer0(t, helmRun(t, xr), "engine-m")
			startup, readiness, liveness := helmHTTPProbe(10, 120), helmHTTPProbe(5, 3), helmHTTPProbe(10, 3)
			startup.InitialDelaySeconds, readiness.InitialDelaySeconds, liveness.TimeoutSeconds = 15, 15, 5
			helmEqual(t, "probes", []*corev1.Probe{startup, readiness, liveness}, []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe})
		},

		"`servingEngineSpec.securityContext`, `containerSecurityContext`": func(t *testing.T) {
			xr := with("pod.securityContext", map[string]any{"runAsUser": 1000, "fsGroup": 1000},
				"pod.containerSecurityContext", map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}})
			pod := helmDeployment(t, helmRun(t, xr), "engine-m").Spec.Template.Spec
			helmEqual(t, "pod securityContext", &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), FSGroup: ptr.To(int64(1000))}, pod.SecurityContext)
			helmEqual(t, "container securityContext", &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}, pod.Containers[0].SecurityContext)
		},

		"`servingEngineSpec.vllmApiKey`, `routerSpec.vllmApiKey`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.apiKeySecret", map[string]any{"name": "vllm-api-key", "key": "api-key"}))
			key := secretEnvVar("VLLM_API_KEY", "vllm-api-key", "api-key")
			helmEqual(t, "router env", []corev1.EnvVar{{Name: "HOME", Value: "/home/router"}, key}, helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0].Env)
			helmEqual(t, "engine env", append(engineEnvOf("HF_HOME", "/data"), key), engineContainer0(t, rsp, "engine-m").Env)
			helmFatal(t, with("routerConfig.apiKeySecret", "sk-xxxxxxxx"), helmMsgAPIKeyLiteral)
		},

		"`servingEngineSpec.sidecar.{image, imagePullPolicy}`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("model.enableLoRA", true, "loraSidecar.image", "lmcache/lmstack-sidecar:v0.1.0")), "engine-m").Spec.Template.Spec
			if len(pod.Containers) != 2 {
				t.Fatalf("containers %d, want vllm and the sidecar", len(pod.Containers))
			}
			helmEqual(t, "sidecar", []any{"sidecar", "lmcache/lmstack-sidecar:v0.1.0", corev1.PullPolicy("")},
				[]any{pod.Containers[1].Name, pod.Containers[1].Image, pod.Containers[1].ImagePullPolicy})
		},

		"`servingEngineSpec.serviceMonitor.*`, `routerSpec.serviceMonitor.*`": func(t *testing.T) {
			rsp := helmRun(t, with("monitoring.serviceMonitor", map[string]any{"interval": "15s", "labels": map[string]any{"release": "kube-prometheus-stack"}}))
			for key, port := range map[string]string{"engine-servicemonitor": "service-port", "servicemonitor-router": "router-sport"} {
				sm := objectMap(t, rsp, key)
				helmEqual(t, key+" endpoints", []any{map[string]any{"port": port, "path": "/metrics", "interval": "15s"}}, sm["spec"].(map[string]any)["endpoints"])
				helmEqual(t, key+" release label", "kube-prometheus-stack", sm["metadata"].(map[string]any)["labels"].(map[string]any)["release"])
			}
			for key, name := range map[string]string{"engine-servicemonitor": "s-engine-servicemonitor", "servicemonitor-router": "s-router-servicemonitor"} {
				helmEqual(t, key+" name", name, objectMap(t, rsp, key)["metadata"].(map[string]any)["name"])
			}
		},

		"`routerSpec.repository`, `tag`": func(t *testing.T) {
			in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "router": map[string]any{"image": "lmcache/lmstack-router", "tag": "v0.1.9"}}
			image := func(xr map[string]any) string {
				return helmDeployment(t, mustRun(t, req(t, xr, in, nil)), "router").Spec.Template.Spec.Containers[0].Image
			}
			helmEqual(t, "images", []string{"lmcache/lmstack-router:v0.1.9", "registry.example.com/router:dev"},
				[]string{image(minimalXR()), image(with("routerConfig.image", "registry.example.com/router:dev"))})
			// The Input's tag is a release: flags it does not parse are refused.
			if got := fatal(t, run(t, req(t, with("routerConfig.routerType", "prefixaware", "routerConfig.prefixMinMatchLength", 4), in, nil))); !strings.Contains(got, "needs router 0.1.12 or later") {
				t.Errorf("prefixMinMatchLength on router 0.1.9: %s", got)
			}
		},

		"`routerSpec.imagePullPolicy`, `imagePullSecrets`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, with("routerConfig.imagePullPolicy", "IfNotPresent", "routerConfig.imagePullSecretName", "regcred")), "router").Spec.Template.Spec
			helmEqual(t, "imagePullPolicy", corev1.PullIfNotPresent, pod.Containers[0].ImagePullPolicy)
			helmEqual(t, "imagePullSecrets", []corev1.LocalObjectReference{{Name: "regcred"}}, pod.ImagePullSecrets)
		},

		"`routerSpec.replicaCount`, `resources`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, with("routerConfig.replicas", 2, "routerConfig.resources", map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "2G"}, "limits": map[string]any{"cpu": "1", "memory": "2G"}})), "router")
			helmEqual(t, "replicas", ptr.To(int32(2)), d.Spec.Replicas)
			helmEqual(t, "resources", corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": helmQ("1"), "memory": helmQ("2G")},
				Limits:   corev1.ResourceList{"cpu": helmQ("1"), "memory": helmQ("2G")},
			}, d.Spec.Template.Spec.Containers[0].Resources)
			helmEqual(t, "default resources", corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": helmQ("400m"), "memory": helmQ("1000Mi")},
				Limits:   corev1.ResourceList{"memory": helmQ("1000Mi")},
			}, helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec.Containers[0].Resources)
		},

		"`routerSpec.autoscaling.*`, `pdb.*`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.autoscaling", map[string]any{"minReplicas": 2, "maxReplicas": 3, "targetCPUUtilizationPercentage": 70},
				"routerConfig.podDisruptionBudget", map[string]any{"minAvailable": 1}))
			if v, sent := specReplicas(t, rsp, "router"); sent {
				t.Errorf("router spec.replicas = %v is sent, but the HorizontalPodAutoscaler owns the replicas", v)
			}
			hpa := desired(t, rsp, "router-autoscaler", &autoscalingv2.HorizontalPodAutoscaler{})
			helmEqual(t, "HPA name", "s-router-hpa", hpa.Name)
			helmEqual(t, "HPA spec", autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "s-deployment-router"},
				MinReplicas:    ptr.To(int32(2)), MaxReplicas: 3,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(70))}}}},
			}, hpa.Spec)
			pdb := desired(t, rsp, "pdb-router", &policyv1.PodDisruptionBudget{})
			helmEqual(t, "PDB name", "s-pdb-router", pdb.Name)
			helmEqual(t, "PDB spec", policyv1.PodDisruptionBudgetSpec{
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "router", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "router"}},
				MinAvailable: ptr.To(intstr.FromInt32(1)),
			}, pdb.Spec)
			helmEqual(t, "PDB metadata", []any{helmStackLabels("router", "router"), map[string]string(nil)}, []any{pdb.Labels, pdb.Annotations})
		},

		"`routerSpec.priorityClassName`, `affinity`, `nodeSelectorTerms`": func(t *testing.T) {
			xr := with("routerConfig.scheduling", map[string]any{
				"priorityClassName": "router-high",
				"nodeSelector":      map[string]any{"pool": "cpu"},
				"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
				"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "node-role", "operator": "In", "values": []any{"cpu"}}}}}}}},
			})
			pod := helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec
			helmEqual(t, "router scheduling", corev1.PodSpec{
				PriorityClassName: "router-high",
				NodeSelector:      map[string]string{"pool": "cpu"},
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role", Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu"}}}}}}}},
			}, corev1.PodSpec{PriorityClassName: pod.PriorityClassName, NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, Affinity: pod.Affinity,
				RuntimeClassName: pod.RuntimeClassName, SchedulerName: pod.SchedulerName})
		},

		"`routerSpec.podAnnotations`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, with("routerConfig.podAnnotations", map[string]any{"sidecar.istio.io/inject": "false"})), "router")
			helmEqual(t, "router pod annotations", map[string]string{"sidecar.istio.io/inject": "false"}, d.Spec.Template.Annotations)
		},

		"`routerSpec.serviceAccountName`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.serviceAccountName", "router-workload-identity"))
			pod := helmDeployment(t, rsp, "router").Spec.Template.Spec
			helmEqual(t, "router identity", []any{"router-workload-identity", ptr.To(true)}, []any{pod.ServiceAccountName, pod.AutomountServiceAccountToken})
			helmEqual(t, "the stack's own account's token", (*bool)(nil), helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec.AutomountServiceAccountToken)
			helmEqual(t, "RoleBinding subjects", []rbacv1.Subject{{Kind: "ServiceAccount", Name: "router-workload-identity", Namespace: "llm"}},
				desired(t, rsp, "router-rolebinding", &rbacv1.RoleBinding{}).Subjects)
			helmEqual(t, "objects: no ServiceAccount of the stack's", slices.DeleteFunc(slices.Clone(helmStackKeys), func(k string) bool { return k == "router-serviceaccount" }), helmKeys(rsp))
			helmFatal(t, with("routerConfig.serviceAccountName", "Router_SA"), helmInvalid+`spec.routerConfig.serviceAccountName "Router_SA" is not a valid object name: `+
				`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character `+
				`(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`)
		},

		"`routerSpec.extraVolumes`, `extraVolumeMounts`": func(t *testing.T) {
			own := helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec
			xr := with("routerConfig.extraVolumes", []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
				"routerConfig.extraVolumeMounts", []any{map[string]any{"name": "tmp", "mountPath": "/tmp"}})
			pod := helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec
			helmEqual(t, "volumes", append(own.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}), pod.Volumes)
			helmEqual(t, "mounts", append(own.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}), pod.Containers[0].VolumeMounts)
			helmFatal(t, with("routerConfig.extraVolumeMounts", []any{map[string]any{"name": "cache", "mountPath": "/cache"}}),
				helmInvalid+`spec.routerConfig.extraVolumeMounts[0] mounts volume "cache", which no volume of the pod has: add it to routerConfig.extraVolumes`)
			helmFatal(t, with("routerConfig.extraVolumes", []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}},
				"routerConfig.extraVolumeMounts", []any{map[string]any{"name": "cache", "mountPath": "/home/router"}}),
				helmInvalid+`spec.routerConfig.extraVolumeMounts[0].mountPath "/home/router" is already mounted in the container: use another path`)
			helmFatal(t, with("routerConfig.extraVolumes", []any{map[string]any{"name": build.VolumeRouterHome, "emptyDir": map[string]any{}}}),
				helmInvalid+`spec.routerConfig.extraVolumes[0].name "`+build.VolumeRouterHome+`" is used by the stack itself: choose another name`)
			// The API server's mount rules (internal/kubeapi) hold for the router's mounts too.
			helmFatal(t, with("routerConfig.extraVolumes", []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
				"routerConfig.extraVolumeMounts", []any{map[string]any{"name": "tmp", "mountPath": "/tmp", "subPath": "../x"}}),
				helmInvalid+`spec.routerConfig.extraVolumeMounts[0].subPath "../x" is invalid: must not contain '..'`)
		},

		"`routerSpec.labels`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, minimalXR()), "router")
			helmEqual(t, "router pod labels", helmStackLabels("router", "router"), d.Spec.Template.Labels)
			helmFatal(t, with("routerConfig.labels", map[string]any{"environment": "router"}), helmUnknownField("spec.routerConfig.labels"))
		},

		"`routerSpec.securityContext`, `containerSecurityContext`": func(t *testing.T) {
			pod := helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec
			helmEqual(t, "pod securityContext", &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(1000)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}, pod.SecurityContext)
			helmEqual(t, "HOME on an emptyDir", []any{corev1.EnvVar{Name: "HOME", Value: "/home/router"}, []corev1.VolumeMount{{Name: "home", MountPath: "/home/router"}},
				[]corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
				[]any{pod.Containers[0].Env[0], pod.Containers[0].VolumeMounts, pod.Volumes})
			helmEqual(t, "container securityContext", &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}, pod.Containers[0].SecurityContext)
		},

		"`routerSpec.strategy`": func(t *testing.T) {
			helmEqual(t, "router strategy", appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Strategy)
		},

		"`routerSpec.{startupProbe, readinessProbe, livenessProbe}`": func(t *testing.T) {
			c := helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec.Containers[0]
			helmEqual(t, "router probes", []*corev1.Probe{nil, helmHTTPProbe(5, 3), helmHTTPProbe(10, 3)}, []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe})
		},

		"`routerSpec.serviceType`, `servicePort`, `serviceAnnotations`, `nodePort`": func(t *testing.T) {
			svc := desired(t, helmRun(t, with("routerConfig.service", map[string]any{"type": "NodePort", "port": 8080, "nodePort": 30080,
				"annotations": map[string]any{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}})), "router-service", &corev1.Service{})
			helmEqual(t, "router Service", []any{corev1.ServiceTypeNodePort, map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
				[]corev1.ServicePort{{Name: "router-sport", Port: 8080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000), NodePort: 30080}}},
				[]any{svc.Spec.Type, svc.Annotations, svc.Spec.Ports})
		},

		"`routerSpec.serviceDiscovery`, `staticBackends`, `staticModels`": func(t *testing.T) {
			helmEqual(t, "router args", helmRouterArgs("--routing-logic=roundrobin"), helmDeployment(t, helmRun(t, minimalXR()), "router").Spec.Template.Spec.Containers[0].Args)
			helmFatal(t, with("routerConfig.staticBackends", "http://10.0.0.1:8000"), helmUnknownField("spec.routerConfig.staticBackends"))
		},

		"`routerSpec.k8sServiceDiscoveryType`": func(t *testing.T) {
			// With service-name the router dials each engine Service at
			// --k8s-port, and watches and reads Services, reads their
			// Endpoints and lists their pods; not the chart's every verb
			// (router-k8s-calls.tsv).
			rsp := helmRun(t, with("routerConfig.k8sServiceDiscoveryType", "service-name"))
			helmEqual(t, "router args", helmRouterArgs("--routing-logic=roundrobin", "--k8s-service-discovery-type=service-name", "--k8s-port", "80"),
				helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0].Args)
			helmEqual(t, "Role", []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
				{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{"get"}},
			}, desired(t, rsp, "router-role", &rbacv1.Role{}).Rules)
			helmEqual(t, "pod-ip router args", helmRouterArgs("--routing-logic=roundrobin", "--k8s-service-discovery-type=pod-ip"),
				helmDeployment(t, helmRun(t, with("routerConfig.k8sServiceDiscoveryType", "pod-ip")), "router").Spec.Template.Spec.Containers[0].Args)
		},

		"`routerSpec.routingLogic`, `sessionKey`": func(t *testing.T) {
			routerArgs := func(xr map[string]any) []string {
				return helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec.Containers[0].Args
			}
			helmEqual(t, "session", helmRouterArgs("--routing-logic=session", "--session-key=x-session-id"),
				routerArgs(with("routerConfig.routerType", "session", "routerConfig.sessionKey", "x-session-id")))
			helmEqual(t, "session, default key", helmRouterArgs("--routing-logic=session", "--session-key=x-user-id"),
				routerArgs(with("routerConfig.routerType", "session")))
			helmEqual(t, "prefixaware", helmRouterArgs("--routing-logic=prefixaware"), routerArgs(with("routerConfig.routerType", "prefixaware")))
			helmEqual(t, "kvaware", helmRouterArgs(helmKVAwareArgs("9000", "9001", "9002")...),
				routerArgs(with("routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true)))
			helmFatal(t, with("routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true, "routerConfig.replicas", 2), helmMsgKVAwareOneRouter)
		},

		"`routerSpec.lmcacheControllerPort`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.routerType", "kvaware", "routerConfig.lmcacheControllerPort", 9100, "lmcacheConfig.enabled", true))
			c := helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0]
			helmEqual(t, "router args", helmRouterArgs(helmKVAwareArgs("9100", "9001", "9002")...), c.Args)
			helmEqual(t, "router container ports", []corev1.ContainerPort{
				{Name: "router-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
				{Name: "lmcache-port", ContainerPort: 9100, Protocol: corev1.ProtocolTCP},
				{Name: "lmcache-reply", ContainerPort: 9001, Protocol: corev1.ProtocolTCP},
				{Name: "lmc-heartbeat", ContainerPort: 9002, Protocol: corev1.ProtocolTCP},
			}, c.Ports)
			helmEqual(t, "router Service ports", []corev1.ServicePort{
				{Name: "router-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)},
				{Name: "lmcache-port", Port: 9100, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmcache-port")},
				{Name: "lmcache-reply", Port: 9001, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmcache-reply")},
				{Name: "lmc-heartbeat", Port: 9002, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmc-heartbeat")},
			}, desired(t, rsp, "router-service", &corev1.Service{}).Spec.Ports)
			helmEqual(t, "engine env", slices.Concat(helmLMCacheEnv, helmKVAwareEnv("9100", "9001", "8001", "10")), engineContainer0(t, rsp, "engine-m").Env)
			def := helmRun(t, with("routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true))
			helmEqual(t, "default port", helmRouterArgs(helmKVAwareArgs("9000", "9001", "9002")...),
				helmDeployment(t, def, "router").Spec.Template.Spec.Containers[0].Args)
		},

		"`routerSpec.lmcacheControllerReplyPort`, `lmcacheControllerHeartbeatPort`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.routerType", "kvaware", "routerConfig.lmcacheControllerReplyPort", 9301, "routerConfig.lmcacheControllerHeartbeatPort", 9302, "lmcacheConfig.enabled", true))
			c := helmDeployment(t, rsp, "router").Spec.Template.Spec.Containers[0]
			helmEqual(t, "router args", helmRouterArgs(helmKVAwareArgs("9000", "9301", "9302")...), c.Args)
			helmEqual(t, "router Service ports", []corev1.ServicePort{
				{Name: "router-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)},
				{Name: "lmcache-port", Port: 9000, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmcache-port")},
				{Name: "lmcache-reply", Port: 9301, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmcache-reply")},
				{Name: "lmc-heartbeat", Port: 9302, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("lmc-heartbeat")},
			}, desired(t, rsp, "router-service", &corev1.Service{}).Spec.Ports)
			helmEqual(t, "engine env", slices.Concat(helmLMCacheEnv, helmKVAwareEnv("9000", "9301", "8001", "10")), engineContainer0(t, rsp, "engine-m").Env)
			helmFatal(t, with("routerConfig.routerType", "kvaware", "routerConfig.lmcacheControllerReplyPort", 9000, "lmcacheConfig.enabled", true),
				helmInvalid+"spec.routerConfig: lmcacheControllerPort 9000, lmcacheControllerReplyPort 9000 and lmcacheControllerHeartbeatPort 9002 must differ: the LMCache controller binds each of them")
			helmFatal(t, with("routerConfig.lmcacheControllerHeartbeatPort", 9302),
				helmInvalid+"spec.routerConfig.lmcacheControllerHeartbeatPort applies to routerType kvaware only, and routerType is roundrobin: set routerType to kvaware or remove lmcacheControllerHeartbeatPort")
		},

		"`routerSpec.prefixMinMatchLength`": func(t *testing.T) {
			got := helmDeployment(t, helmRun(t, with("routerConfig.routerType", "prefixaware", "routerConfig.prefixMinMatchLength", 8)), "router").Spec.Template.Spec.Containers[0].Args
			i := slices.Index(got, "--prefix-min-match-length=8")
			if i < 0 || slices.IndexFunc(got[i+1:], func(a string) bool { return strings.HasPrefix(a, "--prefix-min-match-length") }) >= 0 {
				t.Fatalf("router args %q, want --prefix-min-match-length=8 once", got)
			}
			helmEqual(t, "the other router args", helmRouterArgs("--routing-logic=prefixaware"), slices.Delete(slices.Clone(got), i, i+1))
			helmFatal(t, with("routerConfig.prefixMinMatchLength", 8), helmMsgPrefixMinMatchNeedsPrefixAware)
		},

		"`routerSpec.extraArgs`, `otel.*`, `rootPath`": func(t *testing.T) {
			extra := []string{"--otel-endpoint", "otel-collector:4317", "--otel-service-name", "vllm-router", "--otel-secure", "--root-path", "/vllm"}
			xr := with("routerConfig.extraArgs", []any{"--otel-endpoint", "otel-collector:4317", "--otel-service-name", "vllm-router", "--otel-secure", "--root-path", "/vllm"})
			helmEqual(t, "router args", append(helmRouterArgs("--routing-logic=roundrobin"), extra...),
				helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec.Containers[0].Args)
		},

		"`routerSpec.engineScrapeInterval`, `requestStatsWindow`": func(t *testing.T) {
			xr := with("routerConfig.extraArgs", []any{"--engine-stats-interval", "30", "--request-stats-window", "120"})
			helmEqual(t, "router args", append(helmRouterArgs("--routing-logic=roundrobin"), "--engine-stats-interval", "30", "--request-stats-window", "120"),
				helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec.Containers[0].Args)
		},

		"`routerSpec.hf_token`, `routerSpec.lmcacheConfig.logLevel`": func(t *testing.T) {
			xr := with("routerConfig.env", []any{
				map[string]any{"name": "HF_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "hf-token", "key": "token"}}},
				map[string]any{"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"},
			})
			helmEqual(t, "router env", []corev1.EnvVar{{Name: "HOME", Value: "/home/router"}, secretEnvVar("HF_TOKEN", "hf-token", "token"), {Name: "LMCACHE_LOG_LEVEL", Value: "DEBUG"}},
				helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec.Containers[0].Env)
		},

		"`routerSpec.env`": func(t *testing.T) {
			xr := with("routerConfig.env", []any{map[string]any{"name": "LOG_FORMAT", "value": "json"}, map[string]any{"name": "HOME", "value": "/tmp/router"}})
			helmEqual(t, "router env", []corev1.EnvVar{{Name: "HOME", Value: "/tmp/router"}, {Name: "LOG_FORMAT", Value: "json"}},
				helmDeployment(t, helmRun(t, xr), "router").Spec.Template.Spec.Containers[0].Env)
		},

		"`routerSpec.ingress.*`": func(t *testing.T) {
			ing := desired(t, helmRun(t, with("routerConfig.ingress", map[string]any{"className": "nginx", "host": "vllm-router.local", "path": "/",
				"tlsSecretName": "vllm-router-tls", "annotations": map[string]any{"nginx.ingress.kubernetes.io/proxy-read-timeout": "600"}})), "ingress-router", &networkingv1.Ingress{})
			helmEqual(t, "Ingress", []any{"s-ingress-router", map[string]string{"nginx.ingress.kubernetes.io/proxy-read-timeout": "600"}, networkingv1.IngressSpec{
				IngressClassName: ptr.To("nginx"),
				TLS:              []networkingv1.IngressTLS{{Hosts: []string{"vllm-router.local"}, SecretName: "vllm-router-tls"}},
				Rules: []networkingv1.IngressRule{{Host: "vllm-router.local", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: "s-router-service", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
				}}}},
			}}, []any{ing.Name, ing.Annotations, ing.Spec})
		},

		"`routerSpec.route.*`": func(t *testing.T) {
			rsp := helmRun(t, with("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "acme-gw"}}, "hostnames": []any{"llm.example.com"}}))
			route := objectMap(t, rsp, "httproute-router")
			helmEqual(t, "HTTPRoute", []any{"s-router", "gateway.networking.k8s.io/v1", "HTTPRoute", map[string]any{
				"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "acme-gw"}},
				"hostnames":  []any{"llm.example.com"},
				"rules": []any{map[string]any{
					"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
					"backendRefs": []any{map[string]any{"name": "s-router-service", "port": float64(80)}},
				}},
			}}, []any{route["metadata"].(map[string]any)["name"], route["apiVersion"], route["kind"], route["spec"]})
			helmEqual(t, "HTTPRoute annotations", nil, route["metadata"].(map[string]any)["annotations"])
		},

		"`cacheserverSpec.{enabled, image.repository, image.tag, replicaCount, resources, serde}`": func(t *testing.T) {
			xr := with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{"image": "lmcache/vllm-openai:v0.3.5", "replicas": 2, "serde": "cachegen",
				"resources": map[string]any{"requests": map[string]any{"memory": "16Gi"}}}})
			rsp := helmRun(t, xr)
			d := helmDeployment(t, rsp, "cache-server")
			c := d.Spec.Template.Spec.Containers[0]
			helmEqual(t, "cache server", []any{"s-deployment-cache-server", ptr.To(int32(2)), "lmcache/vllm-openai:v0.3.5",
				corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": helmQ("16Gi")}}},
				[]any{d.Name, d.Spec.Replicas, c.Image, c.Resources})
			helmEqual(t, "engine env", append(slices.Clone(helmLMCacheEnv), env("LMCACHE_REMOTE_URL", "lm://s-cache-server-service:80", "LMCACHE_REMOTE_SERDE", "cachegen")...),
				engineContainer0(t, rsp, "engine-m").Env)
			off := helmRun(t, with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{"enabled": false}}))
			helmEqual(t, "disabled cache server", false, slices.Contains(keys(off), "cache-server"))
		},

		"`cacheserverSpec.{nodeSelector, affinity, tolerations, priorityClassName, runtimeClassName, schedulerName}`": func(t *testing.T) {
			xr := with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{"scheduling": map[string]any{
				"nodeSelector": map[string]any{"pool": "memory"}, "tolerations": []any{map[string]any{"key": "memory", "operator": "Exists"}},
				"priorityClassName": "cache", "runtimeClassName": "runc", "schedulerName": "volcano",
				"affinity": map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
					"weight": 100, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"}}}}},
			}}})
			pod := helmDeployment(t, helmRun(t, xr), "cache-server").Spec.Template.Spec
			helmEqual(t, "cache server scheduling", corev1.PodSpec{
				NodeSelector: map[string]string{"pool": "memory"}, Tolerations: []corev1.Toleration{{Key: "memory", Operator: corev1.TolerationOpExists}},
				PriorityClassName: "cache", RuntimeClassName: ptr.To("runc"), SchedulerName: "volcano",
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}},
			}, corev1.PodSpec{NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, PriorityClassName: pod.PriorityClassName,
				RuntimeClassName: pod.RuntimeClassName, SchedulerName: pod.SchedulerName, Affinity: pod.Affinity})
		},

		"`cacheserverSpec.{containerPort, servicePort, serviceType, serviceAnnotations}`": func(t *testing.T) {
			rsp := helmRun(t, with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{}}))
			svc := desired(t, rsp, "cache-server-service", &corev1.Service{})
			helmEqual(t, "cache server Service", []any{"s-cache-server-service", map[string]string(nil), corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: map[string]string{"app.kubernetes.io/name": "cache-server", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "cache-server"},
				Ports:    []corev1.ServicePort{{Name: "cacheserver-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
			}}, []any{svc.Name, svc.Annotations, svc.Spec})
			helmEqual(t, "cache server container ports", []corev1.ContainerPort{{Name: "caserver-cport", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				helmDeployment(t, rsp, "cache-server").Spec.Template.Spec.Containers[0].Ports)
			helmEqual(t, "engine env", append(slices.Clone(helmLMCacheEnv), env("LMCACHE_REMOTE_URL", "lm://s-cache-server-service:80", "LMCACHE_REMOTE_SERDE", "naive")...),
				engineContainer0(t, rsp, "engine-m").Env)
		},

		"`cacheserverSpec.{imagePullPolicy, imagePullSecrets, annotations, labels, strategy, livenessProbe, securityContext, containerSecurityContext}`": func(t *testing.T) {
			d := helmDeployment(t, helmRun(t, with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{}})), "cache-server")
			pod, c := d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0]
			helmEqual(t, "cache server metadata", []any{helmStackLabels("cache-server", "cache-server"), map[string]string(nil), map[string]string(nil)},
				[]any{d.Spec.Template.Labels, d.Annotations, d.Spec.Template.Annotations})
			helmEqual(t, "cache server defaults", []any{appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}, []corev1.LocalObjectReference(nil), (*corev1.PodSecurityContext)(nil), ptr.To(false),
				corev1.PullPolicy(""), (*corev1.SecurityContext)(nil), (*corev1.Probe)(nil)},
				[]any{d.Spec.Strategy, pod.ImagePullSecrets, pod.SecurityContext, pod.AutomountServiceAccountToken, c.ImagePullPolicy, c.SecurityContext, c.LivenessProbe})
			helmEqual(t, "cache server readiness", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 5, FailureThreshold: 3}, c.ReadinessProbe)
		},

		"`loraAdapters[].*`": func(t *testing.T) {
			xr := with("model.enableLoRA", true, "model.loraAdapters", []any{map[string]any{"name": "nemoguard", "path": "/data/lora-adapters/llama-3.1-nemoguard-8b-topic-control"}})
			helmEqual(t, "args", args("--enable-lora", "--lora-modules", "nemoguard=/data/lora-adapters/llama-3.1-nemoguard-8b-topic-control"),
				engineContainer0(t, helmRun(t, xr), "engine-m").Args)
		},

		"`loraController.*`": func(t *testing.T) {
			rsp := helmRun(t, with("model.enableLoRA", true))
			d := helmDeployment(t, rsp, "engine-m")
			helmEqual(t, "env", engineEnvOf("HF_HOME", "/data", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True"), d.Spec.Template.Spec.Containers[0].Env)
			helmEqual(t, "model label", "m", d.Spec.Template.Labels["model"])
			helmEqual(t, "objects: no controller", helmStackKeys, helmKeys(rsp))
		},

		"`extraObjects`": func(t *testing.T) {
			// The stack composes its own objects only; other objects come
			// from earlier steps of the pipeline, which the function keeps
			// as they are (fn's TestKeepsOtherDesiredResources).
			helmEqual(t, "objects", append([]string{"engine-m", "engine-m-service", "engine-m-storage"}, helmStackKeys[3:]...), helmKeys(helmRun(t, minimalXR())))
		},

		"`grafanaDashboards.{enabled, labels, annotations}`": func(t *testing.T) {
			// What helm2stack makes of grafanaDashboards (its TestConvert):
			// the dashboard ConfigMap with the chart's labels and
			// annotations, next to the ServiceMonitors it needs.
			rsp := helmRun(t, with("monitoring", map[string]any{"serviceMonitor": map[string]any{},
				"dashboard": map[string]any{"annotations": map[string]any{"grafana_folder": "LLM"}}}))
			meta := objectMap(t, rsp, "dashboard")["metadata"].(map[string]any)
			helmEqual(t, "sidecar label", "1", meta["labels"].(map[string]any)["grafana_dashboard"])
			helmEqual(t, "folder annotation", "LLM", meta["annotations"].(map[string]any)["grafana_folder"])
			if _, ok := rsp.objects["engine-servicemonitor"]; !ok {
				t.Error("no engine ServiceMonitor next to the dashboard")
			}
		},

		"`kube-prometheus-stack.*`, `prometheus-adapter.*`": func(t *testing.T) {
			rsp := helmRun(t, with("monitoring.serviceMonitor", map[string]any{}))
			for key, component := range map[string]string{"engine-servicemonitor": "serving-engine", "servicemonitor-router": "router"} {
				want := map[string]any{"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": component,
					"app.kubernetes.io/part-of": "vllm-stack", "app.kubernetes.io/managed-by": "crossplane"}
				if component == "router" {
					want["app.kubernetes.io/name"] = "router"
				}
				helmEqual(t, key+" labels", want, objectMap(t, rsp, key)["metadata"].(map[string]any)["labels"])
			}
		},
	}
}

func TestHelmValues(t *testing.T) {
	for row, check := range helmRows() {
		t.Run(row, check)
	}
}

// TestHelmTableMatchesTests: every row of docs/helm.md's Helm table has a
// case in helmRows and every case a row, each once.
func TestHelmTableMatchesTests(t *testing.T) {
	rows := helmTableKeys(t, "../docs/helm.md")
	cases := helmRows()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("docs/helm.md row %s appears twice", r)
		}
		seen[r] = true
		if _, ok := cases[r]; !ok {
			t.Errorf("README row %s has no test case in helmRows", r)
		}
	}
	for c := range cases {
		if !seen[c] {
			t.Errorf("test case %s has no row in the README's Helm table", c)
		}
	}
	if len(rows) < 50 {
		t.Errorf("found %d rows in the README's Helm table; is the section intact?", len(rows))
	}
}

// helmTableKeys returns the first cell of every row of the table in the
// README's "Coming from the Helm chart" section.
func helmTableKeys(t *testing.T, path string) []string {
	t.Helper()
	rows, err := chartkeys.ReadREADME(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.Cell)
	}
	return keys
}
