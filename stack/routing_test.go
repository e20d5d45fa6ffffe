package stack

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// kvAwareXR is the minimal stack with kvaware routing: LMCache on.
func kvAwareXR(kv ...any) map[string]any {
	return with(append([]any{"routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true}, kv...)...)
}

// TestKVAwareRouter: the router runs the LMCache controller on its pull,
// reply and heartbeat ports, exposed on the container and the Service, and
// gets the threshold.
func TestKVAwareRouter(t *testing.T) {
	cases := map[string]struct {
		xr        map[string]any
		wantArgs  []string // after --routing-logic kvaware
		wantPorts [3]int32
	}{
		"Defaults": {
			xr:        kvAwareXR(),
			wantArgs:  []string{"--session-key=x-user-id", "--lmcache-controller-port=9000", "--lmcache-controller-reply-port=9001", "--lmcache-controller-heartbeat-port=9002"},
			wantPorts: [3]int32{9000, 9001, 9002},
		},
		"PortsThresholdAndSessionKey": {
			xr: kvAwareXR("routerConfig.lmcacheControllerPort", 9100, "routerConfig.lmcacheControllerReplyPort", 9101, "routerConfig.lmcacheControllerHeartbeatPort", 9102,
				"routerConfig.kvAwareThreshold", 512, "routerConfig.sessionKey", "x-session"),
			wantArgs:  []string{"--session-key=x-session", "--lmcache-controller-port=9100", "--lmcache-controller-reply-port=9101", "--lmcache-controller-heartbeat-port=9102", "--kv-aware-threshold=512"},
			wantPorts: [3]int32{9100, 9101, 9102},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, tc.xr, nil, nil))
			c := desired(t, rsp, names.RouterKey, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
			wantArgs := append([]string{"--routing-logic=kvaware"}, tc.wantArgs...)
			wantArgs = append(wantArgs, "--engine-stats-interval", "15", "--request-stats-window", "60")
			if diff := cmp.Diff(wantArgs, c.Args[8:]); diff != "" {
				t.Errorf("router args after the discovery flags (-want +got):\n%s", diff)
			}
			wantPorts := []corev1.ContainerPort{{Name: "router-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}}
			wantSvc := []corev1.ServicePort{{Name: "router-sport", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8000)}}
			for i, name := range []string{"lmcache-port", "lmcache-reply", "lmc-heartbeat"} {
				wantPorts = append(wantPorts, corev1.ContainerPort{Name: name, ContainerPort: tc.wantPorts[i], Protocol: corev1.ProtocolTCP})
				wantSvc = append(wantSvc, corev1.ServicePort{Name: name, Port: tc.wantPorts[i], Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(name)})
			}
			if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
				t.Errorf("router container ports (-want +got):\n%s", diff)
			}
			svc := desired(t, rsp, names.RouterServiceKey, &corev1.Service{})
			if diff := cmp.Diff(wantSvc, svc.Spec.Ports); diff != "" {
				t.Errorf("router Service ports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKVAwareRouterEnv: the router hashes tokens with the engines' seed and
// downloads the models' tokenizers with their Hugging Face token; the
// user's env wins.
func TestKVAwareRouterEnv(t *testing.T) {
	home := corev1.EnvVar{Name: "HOME", Value: "/home/router"}
	seed := corev1.EnvVar{Name: "PYTHONHASHSEED", Value: "0"}
	cases := map[string]struct {
		xr   map[string]any
		want []corev1.EnvVar
	}{
		"NoToken":    {xr: kvAwareXR(), want: []corev1.EnvVar{home, seed}},
		"Token":      {xr: kvAwareXR("vllmConfig.hfTokenSecret.name", "hf"), want: []corev1.EnvVar{home, seed, secretEnvVar("HF_TOKEN", "hf", "token")}},
		"UserToken":  {xr: kvAwareXR("vllmConfig.hfTokenSecret.name", "hf", "routerConfig.env", []any{map[string]any{"name": "HF_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "router-hf", "key": "t"}}}}), want: []corev1.EnvVar{home, seed, secretEnvVar("HF_TOKEN", "router-hf", "t")}},
		"NotKVAware": {xr: with("vllmConfig.hfTokenSecret.name", "hf"), want: []corev1.EnvVar{home}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := desired(t, mustRun(t, req(t, tc.xr, nil, nil)), names.RouterKey, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
			if diff := cmp.Diff(tc.want, c.Env); diff != "" {
				t.Errorf("router env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKVAwareNeedsPodIPDiscovery: kvaware matches LMCache instances to
// engines by pod IP, which service-name discovery does not give it.
func TestKVAwareNeedsPodIPDiscovery(t *testing.T) {
	want := "invalid ProductionStack: spec.routerConfig.k8sServiceDiscoveryType service-name cannot be used with routerType kvaware: the router matches engines' LMCache instances by pod IP; use pod-ip"
	if got := fatal(t, run(t, req(t, kvAwareXR("routerConfig.k8sServiceDiscoveryType", "service-name"), nil, nil))); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
	mustRun(t, req(t, kvAwareXR("routerConfig.k8sServiceDiscoveryType", "pod-ip"), nil, nil))
}

// TestNotKVAwareRouter: other routing logics expose no controller port.
func TestNotKVAwareRouter(t *testing.T) {
	rsp := mustRun(t, req(t, with("lmcacheConfig.enabled", true), nil, nil))
	c := desired(t, rsp, names.RouterKey, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
	if len(c.Ports) != 1 {
		t.Errorf("router container ports = %v, want only router-port", c.Ports)
	}
	if svc := desired(t, rsp, names.RouterServiceKey, &corev1.Service{}); len(svc.Spec.Ports) != 1 {
		t.Errorf("router Service ports = %v, want only router-sport", svc.Spec.Ports)
	}
	e := engineContainer0(t, rsp, names.EngineKey("m"))
	for _, v := range e.Env {
		if v.Name == "LMCACHE_ENABLE_CONTROLLER" || v.Name == "POD_NAME" {
			t.Errorf("engine env has %s without kvaware routing", v.Name)
		}
	}
	if len(e.Ports) != 1 {
		t.Errorf("engine ports = %v, want only container-port", e.Ports)
	}
}

// TestKVAwareEngines: each engine pod registers its LMCache worker with the
// controller in the router, under its own pod name, with the names current
// LMCache reads (and requires together), and sends it heartbeats.
func TestKVAwareEngines(t *testing.T) {
	podName := corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}
	controller := func(pull, reply, ports, heartbeat string) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "PYTHONHASHSEED", Value: "0"},
			podName,
			{Name: "LMCACHE_ENABLE_CONTROLLER", Value: "True"},
			{Name: "LMCACHE_LMCACHE_INSTANCE_ID", Value: "$(POD_NAME)"},
			{Name: "LMCACHE_CONTROLLER_PULL_URL", Value: pull},
			{Name: "LMCACHE_CONTROLLER_REPLY_URL", Value: reply},
			{Name: "LMCACHE_LMCACHE_WORKER_PORTS", Value: ports},
			{Name: "LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME", Value: heartbeat},
		}
	}
	cases := map[string]struct {
		xr       map[string]any
		wantEnv  []corev1.EnvVar // the env after LMCache's own variables
		wantPort int32
	}{
		"Defaults": {xr: kvAwareXR(), wantEnv: controller("s-router-service:9000", "s-router-service:9001", "8001", "10"), wantPort: 8001},
		"TensorParallelWorkers": {
			xr: kvAwareXR("routerConfig.lmcacheControllerPort", 9100, "routerConfig.lmcacheControllerReplyPort", 9200, "lmcacheConfig.workerPort", 7000,
				"lmcacheConfig.workerHeartbeatTime", 5, "vllmConfig.tensorParallelSize", 4, "resources.gpu", "4"),
			wantEnv:  controller("s-router-service:9100", "s-router-service:9200", "7000,7001,7002,7003", "5"),
			wantPort: 7000,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), names.EngineKey("m"))
			want := append(withPodIP(
				corev1.EnvVar{Name: "HF_HOME", Value: "/data"},
				corev1.EnvVar{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
				corev1.EnvVar{Name: "LMCACHE_LOG_LEVEL", Value: "INFO"},
			), tc.wantEnv...)
			if diff := cmp.Diff(want, c.Env); diff != "" {
				t.Errorf("engine env (-want +got):\n%s", diff)
			}
			wantPorts := []corev1.ContainerPort{
				{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
				{Name: "lmcache-worker", ContainerPort: tc.wantPort, Protocol: corev1.ProtocolTCP},
			}
			if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
				t.Errorf("engine ports (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKVAwareNetworkPolicy: the controller in the router may call the
// engines' LMCache workers back, on every worker's port; the scrape sources
// may not.
func TestKVAwareNetworkPolicy(t *testing.T) {
	prometheus := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"name": "monitoring"}}}
	models := []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b", "vllmConfig": map[string]any{"tensorParallelSize": 2}, "resources": map[string]any{"gpu": "2"}},
		map[string]any{"name": "c", "modelURL": "org/c", "lmcacheConfig": map[string]any{"workerPort": 9500}},
		map[string]any{"name": "d", "modelURL": "org/d"},
	}
	xr := kvAwareXR("model", nil, "models", models, "networkPolicy", map[string]any{"enabled": true, "allowFrom": []any{prometheus}})
	rsp := mustRun(t, req(t, xr, nil, nil))
	np := desired(t, rsp, names.EngineNetworkPolicyKey, &networkingv1.NetworkPolicy{})
	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("ingress rules = %d, want 2: the API port, and the LMCache worker port", len(np.Spec.Ingress))
	}
	got := np.Spec.Ingress[1]
	if len(np.Spec.Ingress[0].From) != 2 {
		t.Errorf("API port sources = %d, want the router and prometheus", len(np.Spec.Ingress[0].From))
	}
	want := networkingv1.NetworkPolicyIngressRule{
		From: np.Spec.Ingress[0].From[:1],
		Ports: []networkingv1.NetworkPolicyPort{
			{Port: ptr.To(intstr.FromInt32(8001)), EndPort: ptr.To(int32(8002))},
			{Port: ptr.To(intstr.FromInt32(9500))},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LMCache worker rule (-want +got):\n%s", diff)
	}
	if sel := want.From[0].PodSelector; sel == nil || sel.MatchLabels["app.kubernetes.io/component"] != "router" {
		t.Errorf("LMCache worker rule source = %v, want the stack's router pods", want.From)
	}
}

// TestPrefixMinMatchLength: passed to the router with prefixaware routing.
func TestPrefixMinMatchLength(t *testing.T) {
	xr := with("routerConfig.routerType", "prefixaware", "routerConfig.prefixMinMatchLength", 256)
	c := desired(t, mustRun(t, req(t, xr, nil, nil)), names.RouterKey, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
	want := []string{"--routing-logic=prefixaware", "--prefix-min-match-length=256", "--engine-stats-interval", "15", "--request-stats-window", "60"}
	if diff := cmp.Diff(want, c.Args[8:]); diff != "" {
		t.Errorf("router args after the discovery flags (-want +got):\n%s", diff)
	}
}

// TestStickyRoutingNeedsPodIPDiscovery: session and prefixaware routing
// stick a session or a prefix to one endpoint URL; with service-name
// discovery a model has one URL, its Service, so more than one engine
// (replicas, or an autoscaler's maxReplicas) is refused, and one engine
// passes.
func TestStickyRoutingNeedsPodIPDiscovery(t *testing.T) {
	const want = "invalid ProductionStack: spec.routerConfig.k8sServiceDiscoveryType service-name cannot be used with routerType %s when a model runs more than one engine (%s): the router sees one URL per model, its Service, which spreads requests over every engine, so routing is not sticky; use pod-ip, or one engine"
	for name, tc := range map[string]struct {
		routerType string
		xr         []any
		engines    string
	}{
		"Session":     {routerType: "session", xr: []any{"replicas", 3}, engines: "spec: replicas 3"},
		"PrefixAware": {routerType: "prefixaware", xr: []any{"replicas", 2}, engines: "spec: replicas 2"},
		"Autoscaling": {routerType: "session", xr: []any{"autoscaling", map[string]any{"type": "hpa", "maxReplicas": 4}}, engines: "spec: autoscaling.maxReplicas 4"},
		"OfAModel": {routerType: "prefixaware", xr: []any{"model", nil, "models", []any{
			map[string]any{"name": "a", "modelURL": "org/a"},
			map[string]any{"name": "b", "modelURL": "org/b", "replicas": 2},
		}}, engines: "spec.models[1]: replicas 2"},
	} {
		t.Run(name, func(t *testing.T) {
			kv := append([]any{"routerConfig.routerType", tc.routerType, "routerConfig.sessionKey", "x-session-id", "routerConfig.k8sServiceDiscoveryType", "service-name"}, tc.xr...)
			if got, want := fatal(t, run(t, req(t, with(kv...), nil, nil))), fmt.Sprintf(want, tc.routerType, tc.engines); got != want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
			}
			kv[5] = "pod-ip"
			mustRun(t, req(t, with(kv...), nil, nil))
		})
	}
	mustRun(t, req(t, with("routerConfig.routerType", "session", "routerConfig.sessionKey", "x", "routerConfig.k8sServiceDiscoveryType", "service-name", "replicas", 1), nil, nil))
	mustRun(t, req(t, with("routerConfig.routerType", "roundrobin", "routerConfig.k8sServiceDiscoveryType", "service-name", "replicas", 3), nil, nil))
}
