package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
)

func engineDeployment0(t *testing.T, xr map[string]any) *appsv1.Deployment {
	t.Helper()
	return desired(t, mustRun(t, req(t, xr, nil, nil)), "engine-m", &appsv1.Deployment{})
}

func TestScheduling(t *testing.T) {
	xr := with("scheduling", map[string]any{
		"nodeSelector":      map[string]any{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
		"tolerations":       []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity":          map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 100, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"}}}}},
		"runtimeClassName":  "nvidia",
		"priorityClassName": "inference-high",
		"schedulerName":     "volcano",
	})
	pod := engineDeployment0(t, xr).Spec.Template.Spec
	want := corev1.PodSpec{
		NodeSelector:      map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
		Tolerations:       []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Affinity:          &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}},
		RuntimeClassName:  ptr.To("nvidia"),
		PriorityClassName: "inference-high",
		SchedulerName:     "volcano",
	}
	got := corev1.PodSpec{NodeSelector: pod.NodeSelector, Tolerations: pod.Tolerations, Affinity: pod.Affinity,
		RuntimeClassName: pod.RuntimeClassName, PriorityClassName: pod.PriorityClassName, SchedulerName: pod.SchedulerName}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduling (-want +got):\n%s", diff)
	}

	none := engineDeployment0(t, minimalXR()).Spec.Template.Spec
	if none.NodeSelector != nil || none.Tolerations != nil || none.Affinity != nil || none.RuntimeClassName != nil || none.SchedulerName != "" {
		t.Errorf("no scheduling fields may be sent unless set: %+v", none)
	}
}

// TestSchedulingPerModel: an item's scheduling block is merged into the
// top-level one field by field.
func TestSchedulingPerModel(t *testing.T) {
	xr := with("model", nil,
		"scheduling", map[string]any{"runtimeClassName": "nvidia", "nodeSelector": map[string]any{"pool": "a100"}},
		"models", []any{
			map[string]any{"name": "m", "modelURL": "org/m", "scheduling": map[string]any{"nodeSelector": map[string]any{"pool": "h100"}}},
			map[string]any{"name": "n", "modelURL": "org/n"},
		})
	rsp := mustRun(t, req(t, xr, nil, nil))
	m := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec
	n := desired(t, rsp, "engine-n", &appsv1.Deployment{}).Spec.Template.Spec
	if m.NodeSelector["pool"] != "h100" || *m.RuntimeClassName != "nvidia" {
		t.Errorf("model m: nodeSelector %v runtimeClass %v, want its own pool h100 and the inherited class nvidia", m.NodeSelector, *m.RuntimeClassName)
	}
	if n.NodeSelector["pool"] != "a100" || *n.RuntimeClassName != "nvidia" {
		t.Errorf("model n: nodeSelector %v runtimeClass %v, want the top-level a100 and nvidia", n.NodeSelector, *n.RuntimeClassName)
	}
}

func TestPodConfig(t *testing.T) {
	xr := with("pod", map[string]any{
		"annotations":                  map[string]any{"prometheus.io/scrape": "true"},
		"labels":                       map[string]any{"team": "ml"},
		"securityContext":              map[string]any{"fsGroup": 1000},
		"containerSecurityContext":     map[string]any{"allowPrivilegeEscalation": false},
		"serviceAccountName":           "vllm",
		"automountServiceAccountToken": true,
		"initContainers":               []any{map[string]any{"name": "fetch", "image": "amazon/aws-cli:2", "args": []any{"s3", "sync", "s3://models/m", "/data/m"}}},
	})
	d := engineDeployment0(t, xr)
	pod := d.Spec.Template
	if pod.Annotations["prometheus.io/scrape"] != "true" || pod.Labels["team"] != "ml" || pod.Labels[names.LabelInstance] != "s" {
		t.Errorf("pod metadata: annotations %v labels %v", pod.Annotations, pod.Labels)
	}
	if _, ok := d.Labels["team"]; ok {
		t.Error("extra pod labels belong on pods, not on the Deployment")
	}
	if _, ok := d.Spec.Selector.MatchLabels["team"]; ok {
		t.Error("extra pod labels must never be in the selector: it is immutable")
	}
	if pod.Spec.SecurityContext == nil || *pod.Spec.SecurityContext.FSGroup != 1000 {
		t.Errorf("pod securityContext %+v", pod.Spec.SecurityContext)
	}
	if c := pod.Spec.Containers[0].SecurityContext; c == nil || *c.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v", c)
	}
	if pod.Spec.ServiceAccountName != "vllm" || !*pod.Spec.AutomountServiceAccountToken {
		t.Errorf("serviceAccountName %q automount %v", pod.Spec.ServiceAccountName, *pod.Spec.AutomountServiceAccountToken)
	}
	want := []corev1.Container{{Name: "fetch", Image: "amazon/aws-cli:2", Args: []string{"s3", "sync", "s3://models/m", "/data/m"}}}
	if diff := cmp.Diff(want, pod.Spec.InitContainers); diff != "" {
		t.Errorf("initContainers (-want +got):\n%s", diff)
	}

	def := engineDeployment0(t, minimalXR()).Spec.Template.Spec
	if def.AutomountServiceAccountToken == nil || *def.AutomountServiceAccountToken {
		t.Error("engine pods must not mount an API token by default")
	}
}

func TestProbeOverrides(t *testing.T) {
	xr := with("probes", map[string]any{
		"startup":  map[string]any{"failureThreshold": 180, "periodSeconds": 20},
		"liveness": map[string]any{"timeoutSeconds": 5},
	})
	c := engineDeployment0(t, xr).Spec.Template.Spec.Containers[0]
	handler := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP}}
	for name, tc := range map[string]struct{ got, want *corev1.Probe }{
		"startup":   {c.StartupProbe, &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 20, FailureThreshold: 180}},
		"readiness": {c.ReadinessProbe, &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 5, FailureThreshold: 3}},
		"liveness":  {c.LivenessProbe, &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 5}},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s probe (-want +got):\n%s", name, diff)
		}
	}
}

func TestRollingUpdate(t *testing.T) {
	d := engineDeployment0(t, with("rollingUpdate", map[string]any{"maxSurge": 0, "maxUnavailable": "50%"}))
	want := &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("50%"))}
	if diff := cmp.Diff(want, d.Spec.Strategy.RollingUpdate); diff != "" {
		t.Errorf("rollingUpdate (-want +got):\n%s", diff)
	}
	half := engineDeployment0(t, with("rollingUpdate", map[string]any{"maxUnavailable": 1}))
	want = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	if diff := cmp.Diff(want, half.Spec.Strategy.RollingUpdate); diff != "" {
		t.Errorf("an unset bound keeps its default (-want +got):\n%s", diff)
	}
}

func TestPodDisruptionBudgets(t *testing.T) {
	sel := func(name, component string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{names.LabelName: name, names.LabelInstance: "s", names.LabelComponent: component}}
	}
	cases := map[string]struct {
		xr         map[string]any
		key        string
		wantName   string
		wantSpec   policyv1.PodDisruptionBudgetSpec
		wantAbsent bool
	}{
		"EngineDefaultOneDown": {xr: with("podDisruptionBudget", map[string]any{}), key: "engine-m-pdb-vllm", wantName: "s-m-pdb-vllm",
			wantSpec: policyv1.PodDisruptionBudgetSpec{Selector: sel("m", "serving-engine"), MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		"EngineMinAvailable": {xr: with("podDisruptionBudget", map[string]any{"minAvailable": "50%"}), key: "engine-m-pdb-vllm", wantName: "s-m-pdb-vllm",
			wantSpec: policyv1.PodDisruptionBudgetSpec{Selector: sel("m", "serving-engine"), MinAvailable: ptr.To(intstr.FromString("50%"))}},
		"EngineDisabled": {xr: with("podDisruptionBudget", map[string]any{"enabled": false}), key: "engine-m-pdb-vllm", wantAbsent: true},
		"EngineNone":     {xr: minimalXR(), key: "engine-m-pdb-vllm", wantAbsent: true},
		"Router": {xr: with("routerConfig.podDisruptionBudget", map[string]any{"minAvailable": 1}), key: "pdb-router", wantName: "s-pdb-router",
			wantSpec: policyv1.PodDisruptionBudgetSpec{Selector: sel("router", "router"), MinAvailable: ptr.To(intstr.FromInt32(1))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, tc.xr, nil, nil))
			if tc.wantAbsent {
				if _, ok := rsp.objects[tc.key]; ok {
					t.Errorf("%s must not be rendered", tc.key)
				}
				return
			}
			pdb := desired(t, rsp, tc.key, &policyv1.PodDisruptionBudget{})
			if pdb.Name != tc.wantName || pdb.Namespace != "llm" {
				t.Errorf("name %s/%s, want llm/%s", pdb.Namespace, pdb.Name, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantSpec, pdb.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStorageModes(t *testing.T) {
	size := resource.MustParse("100Gi")
	shm := resource.MustParse("32Gi")
	cases := map[string]struct {
		xr         map[string]any
		wantClaim  bool
		wantVols   []corev1.Volume
		wantMounts []corev1.VolumeMount
	}{
		"EmptyDir": {xr: with("storage.emptyDir", map[string]any{"sizeLimit": "100Gi"}),
			wantVols:   []corev1.Volume{{Name: "s-storage", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}}},
			wantMounts: []corev1.VolumeMount{{Name: "s-storage", MountPath: "/data"}}},
		"EmptyDirUnbounded": {xr: with("storage.emptyDir", map[string]any{}),
			wantVols:   []corev1.Volume{{Name: "s-storage", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			wantMounts: []corev1.VolumeMount{{Name: "s-storage", MountPath: "/data"}}},
		"ShmSizeMountsShm": {xr: with("storage", map[string]any{"enabled": false, "shmSize": "32Gi"}),
			wantVols:   []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}}},
			wantMounts: []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}},
		"ExtraVolumes": {xr: with("storage", map[string]any{"enabled": false,
			"extraVolumes":      []any{map[string]any{"name": "adapters", "configMap": map[string]any{"name": "lora"}}},
			"extraVolumeMounts": []any{map[string]any{"name": "adapters", "mountPath": "/adapters", "readOnly": true}}}),
			wantVols:   []corev1.Volume{{Name: "adapters", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "lora"}}}}},
			wantMounts: []corev1.VolumeMount{{Name: "adapters", MountPath: "/adapters", ReadOnly: true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, tc.xr, nil, nil))
			d := desired(t, rsp, "engine-m", &appsv1.Deployment{})
			if diff := cmp.Diff(tc.wantVols, d.Spec.Template.Spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, d.Spec.Template.Spec.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if _, ok := rsp.objects["engine-m-storage"]; ok != tc.wantClaim {
				t.Errorf("claim rendered = %v, want %v", ok, tc.wantClaim)
			}
		})
	}
}

func TestRouterExtras(t *testing.T) {
	xr := with(
		"routerConfig.k8sServiceDiscoveryType", "service-name",
		"routerConfig.extraArgs", []any{"--log-level", "debug"},
		"routerConfig.env", []any{map[string]any{"name": "LOG_FORMAT", "value": "json"}},
		"routerConfig.apiKeySecret", map[string]any{"name": "vllm-api-key"},
		"routerConfig.service", map[string]any{"type": "LoadBalancer", "port": 8080, "annotations": map[string]any{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}},
	)
	rsp := mustRun(t, req(t, xr, nil, nil))
	c := desired(t, rsp, "router", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
	wantArgs := []string{"--host", "0.0.0.0", "--port", "8000", "--service-discovery", "k8s", "--k8s-namespace=llm",
		"--k8s-label-selector=app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine", "--routing-logic=roundrobin",
		"--k8s-service-discovery-type=service-name", "--k8s-port", "80", "--engine-stats-interval", "15", "--request-stats-window", "60", "--log-level", "debug"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("router args (-want +got):\n%s", diff)
	}
	apiKey := secretEnvVar("VLLM_API_KEY", "vllm-api-key", "token")
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "HOME", Value: "/home/router"}, apiKey, {Name: "LOG_FORMAT", Value: "json"}}, c.Env); diff != "" {
		t.Errorf("router env (-want +got):\n%s", diff)
	}
	engineEnv := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Env
	if diff := cmp.Diff(withPodIP(corev1.EnvVar{Name: "HF_HOME", Value: "/data"}, apiKey), engineEnv); diff != "" {
		t.Errorf("engines need the same API key (-want +got):\n%s", diff)
	}
	svc := desired(t, rsp, "router-service", &corev1.Service{})
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.IntValue() != 8000 ||
		svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-internal"] != "true" {
		t.Errorf("router Service: %+v %+v", svc.Spec, svc.Annotations)
	}
}
