package stack

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestKubernetesTypeErrors: the Kubernetes types a spec holds as they are
// (extra volumes and mounts, init containers, env sources, resource
// requirements, probes, images, annotations, tolerations, affinity, security
// contexts, volume sources) are refused when the API server would refuse the
// Deployment or Service they go into. The first were found by test/fuzz
// composing an object test/internal/kubecheck refuses; the last follow the
// API server's rules (internal/kubeapi).
func TestKubernetesTypeErrors(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"ExtraVolumeWithoutSource": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "x"}}),
			want: `invalid ProductionStack: spec.storage.extraVolumes[0] sets 0 volume sources: set exactly one, such as persistentVolumeClaim, configMap, secret or emptyDir`,
		},
		"ExtraVolumeBadNameNegativeSize": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "Bad_Name", "emptyDir": map[string]any{"sizeLimit": "-1Gi"}}}),
			want: `invalid ProductionStack: spec.storage.extraVolumes[0].name "Bad_Name" is not a volume name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); spec.storage.extraVolumes[0].emptyDir.sizeLimit -1Gi is invalid: must be 0 or more`,
		},
		"ExtraVolumesSameName": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "a", "emptyDir": map[string]any{}}, map[string]any{"name": "a", "emptyDir": map[string]any{}}}),
			want: `invalid ProductionStack: spec.storage.extraVolumes[1].name "a" is also the name of extraVolumes[0]: volume names must be unique`,
		},
		"ExtraMountOfAbsentStackVolume": {
			xr:   with("storage.extraVolumeMounts", []any{map[string]any{"name": "shm", "mountPath": "/dev/shm"}}),
			want: `invalid ProductionStack: spec: storage.extraVolumeMounts[0] mounts volume "shm", which no volume of the pod has: add it to storage.extraVolumes`,
		},
		"ExtraMountOverModelCache": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "a", "emptyDir": map[string]any{}}}, "storage.extraVolumeMounts", []any{map[string]any{"name": "a", "mountPath": "/data/"}}),
			want: `invalid ProductionStack: spec: storage.extraVolumeMounts[0].mountPath "/data/" is already mounted in the container: use another path`,
		},
		"ExtraMountRelativePath": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "a", "emptyDir": map[string]any{}}}, "storage.extraVolumeMounts", []any{map[string]any{"name": "a", "mountPath": "adapters"}}),
			want: `invalid ProductionStack: spec: storage.extraVolumeMounts[0].mountPath "adapters" is invalid: use an absolute path such as /adapters`,
		},
		"InitContainerPortsAndProbe": {
			xr:   with("pod.initContainers", []any{map[string]any{"name": "init", "image": "busybox", "ports": []any{map[string]any{"containerPort": 0, "name": "container-port", "protocol": "HTTP"}}, "readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 1}}}}),
			want: `invalid ProductionStack: spec.pod.initContainers[0].ports[0].containerPort 0 is invalid: must be a port number from 1 to 65535; spec.pod.initContainers[0].ports[0].protocol "HTTP" is not supported: use one of TCP, UDP, SCTP; spec.pod.initContainers[0].readinessProbe is refused: only an init container with restartPolicy Always (a sidecar) may have probes; spec: pod.initContainers[0] port name "container-port" is also the name of another port of the pod: port names must be unique`,
		},
		"InitContainerImageEnvMounts": {
			xr:   with("pod.initContainers", []any{map[string]any{"name": "init", "image": " busybox", "env": []any{map[string]any{"name": "A", "valueFrom": map[string]any{}}, map[string]any{"name": "A", "value": "x"}}, "volumeMounts": []any{map[string]any{"name": "nope", "mountPath": "/x"}}}}),
			want: `invalid ProductionStack: spec.pod.initContainers[0].image " busybox" is invalid: an image reference has no leading or trailing whitespace; spec.pod.initContainers[0].env[0].valueFrom sets 0 sources: set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef; spec.pod.initContainers[0].env[1].name "A" is set twice in the container: remove one; spec: pod.initContainers[0].volumeMounts[0] mounts volume "nope", which no volume of the pod has: add it to storage.extraVolumes`,
		},
		"InitContainersSameName": {
			xr:   with("pod.initContainers", []any{map[string]any{"name": "a", "image": "i"}, map[string]any{"name": "a", "image": "i"}}),
			want: `invalid ProductionStack: spec: pod.initContainers[1].name "a" is also the name of pod.initContainers[0]: container names must be unique in the pod`,
		},
		"InitContainerNamedLikeLoRASidecar": {
			xr:   with("model.enableLoRA", true, "pod.initContainers", []any{map[string]any{"name": "sidecar", "image": "i"}}),
			want: `invalid ProductionStack: spec: pod.initContainers[0].name "sidecar" is also the name of the LoRA sidecar: container names must be unique in the pod`,
		},
		"EnvValueFromWithoutSource": {
			xr:   with("env", []any{map[string]any{"name": "A", "valueFrom": map[string]any{}}}),
			want: `invalid ProductionStack: spec.env[0].valueFrom sets 0 sources: set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef`,
		},
		"RouterEnvValueAndValueFrom": {
			xr:   with("routerConfig.env", []any{map[string]any{"name": "A", "value": "x", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}),
			want: `invalid ProductionStack: spec.routerConfig.env[0]: set value or valueFrom, not both`,
		},
		"RouterResources": {
			xr:   with("routerConfig.resources", map[string]any{"requests": map[string]any{"cpu": "2", "nvidia.com/gpu": "1"}, "limits": map[string]any{"cpu": "1"}}),
			want: `invalid ProductionStack: spec.routerConfig.resources.requests[cpu] 2 is more than its limit 1: Kubernetes requires a limit of at least the request; spec.routerConfig.resources.requests[nvidia.com/gpu] 1 needs a limit equal to it: Kubernetes cannot overcommit an extended resource such as a GPU`,
		},
		// The API server refuses a container's claim without a name, and any
		// claim the pod does not declare (FuzzComposedObjects, the cache
		// server's claims[0] with only a request).
		"CacheServerResourceClaims": {
			xr: with("lmcacheConfig.server.resources", map[string]any{"claims": []any{map[string]any{"request": ""}}},
				"lmcacheConfig.enabled", true, "lmcacheConfig.server.enabled", true),
			// The XRD requires a claim's name (validate/schema.go), as the API server does.
			want: `invalid ProductionStack: spec.lmcacheConfig.server.resources.claims[0].name is required: set it, or remove spec.lmcacheConfig.server.resources.claims[0]; ` +
				`spec.lmcacheConfig.server.resources.claims is not supported: it names resource claims of the pod (spec.resourceClaims, dynamic resource allocation), and the stack's pods declare none, so Kubernetes refuses any; remove it`,
		},
		"RouterResourceClaims": {
			xr:   with("routerConfig.resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}}),
			want: `invalid ProductionStack: spec.routerConfig.resources.claims is not supported: it names resource claims of the pod (spec.resourceClaims, dynamic resource allocation), and the stack's pods declare none, so Kubernetes refuses any; remove it`,
		},
		"StartupBudgetOverflowsProgressDeadline": {
			xr:   with("probes.startup", map[string]any{"periodSeconds": 2000000000, "failureThreshold": 2}),
			want: `invalid ProductionStack: spec: probes.startup allows 4000000000 seconds (initialDelaySeconds + periodSeconds × failureThreshold), more than the 2147483047 a Deployment's progress deadline can hold: lower periodSeconds or failureThreshold`,
		},
		"StorageSizeZero": {
			xr:   with("storage.size", "0"),
			want: `invalid ProductionStack: spec.storage.size "0" is invalid: a claim must request more than 0 bytes; use a size such as 50Gi`,
		},
		"ImageWithTrailingSpace": {
			xr:   with("vllmConfig.image", "vllm/vllm-openai:latest "),
			want: `invalid ProductionStack: spec.vllmConfig.image "vllm/vllm-openai:latest " is invalid: an image reference has no leading or trailing whitespace`,
		},
		"PodAnnotationsTooLarge": {
			xr:   with("routerConfig.podAnnotations", map[string]any{"a": strings.Repeat("x", 300000)}),
			want: `invalid ProductionStack: spec.routerConfig.podAnnotations are too large: annotations size 300001 is larger than limit 262144; shorten them`,
		},
		// The rules of internal/kubeapi (which holds their tests), at the
		// field the user wrote, for the engines, the router and the cache
		// server alike.
		"Tolerations": {
			xr: with("scheduling.tolerations", jsonOf(`[{"key": "gpu", "operator": "Foo"}, {"key": "gpu", "operator": "Exists", "value": "x", "effect": "Sometimes"}, {"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]`)),
			want: `invalid ProductionStack: spec.scheduling.tolerations[0].operator "Foo" is not supported: use Equal or Exists; ` +
				`spec.scheduling.tolerations[1].value must be empty when operator is Exists: remove value, or use operator: Equal; ` +
				`spec.scheduling.tolerations[1].effect "Sometimes" is not supported: use NoSchedule, PreferNoSchedule or NoExecute; ` +
				`spec.scheduling.tolerations[2].effect "NoSchedule" must be NoExecute when tolerationSeconds is set (only NoExecute taints evict): set effect: NoExecute or remove tolerationSeconds`,
		},
		"ModelAffinity": {
			xr:   with("model", nil, "models", jsonOf(`[{"name": "a", "modelURL": "org/a", "scheduling": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In"}]}]}}}}}]`)),
			want: `invalid ProductionStack: spec.models[0].scheduling.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values is required when operator is In: give at least one value, or use Exists`,
		},
		"RouterAntiAffinity": {
			xr:   with("routerConfig.scheduling", jsonOf(`{"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": ""}}]}}}`)),
			want: `invalid ProductionStack: spec.routerConfig.scheduling.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 0 is invalid: must be from 1 to 100; spec.routerConfig.scheduling.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey is required: name the node label that groups nodes, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone`,
		},
		"CacheServerTolerations": {
			xr:   with("lmcacheConfig", jsonOf(`{"enabled": true, "server": {"scheduling": {"tolerations": [{"value": "x"}]}}}`)),
			want: `invalid ProductionStack: spec.lmcacheConfig.server.scheduling.tolerations[0].operator must be Exists when key is empty (an empty key with Exists tolerates every taint): set key, or operator: Exists`,
		},
		"SecurityContexts": {
			xr: with("pod", jsonOf(`{"securityContext": {"runAsUser": -1, "seccompProfile": {"type": "Localhost"}, "sysctls": [{"name": "Net.Core", "value": "1"}]}, "containerSecurityContext": {"allowPrivilegeEscalation": false, "privileged": true},
				"initContainers": [{"name": "init", "image": "busybox", "securityContext": {"procMount": "Unmasked"}}]}`)),
			want: `invalid ProductionStack: spec.pod.securityContext.runAsUser -1 is invalid: must be a user ID from 0 to 2147483647; ` +
				`spec.pod.securityContext.sysctls[0].name "Net.Core" is not a sysctl name: use at most 253 characters, segments of lowercase letters, digits, '-' and '_' joined by '.' or '/', e.g. net.core.somaxconn; ` +
				`spec.pod.securityContext.seccompProfile.localhostProfile is required when type is Localhost: give the profile's path below the kubelet's seccomp directory, e.g. profiles/vllm.json; ` +
				`spec.pod.containerSecurityContext.allowPrivilegeEscalation cannot be false with privileged: true (a privileged container escalates): remove one of them; ` +
				`spec.pod.initContainers[0].securityContext.procMount Unmasked needs a pod with hostUsers: false, which the stack does not set: use Default or remove procMount`,
		},
		"ExtraVolumeSources": {
			xr: with("storage.extraVolumes", jsonOf(`[{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 1000, "items": [{"key": "a", "path": "../a"}]}}, {"name": "nfs", "nfs": {"server": "nfs", "path": "share"}}, {"name": "host", "hostPath": {"path": "/x", "type": "Dir"}}]`)),
			want: `invalid ProductionStack: spec.storage.extraVolumes[0].configMap.defaultMode 1000 is invalid: must be a file mode from 0 to 0777 (octal; 511 in decimal), e.g. 0644 (420 in decimal); ` +
				`spec.storage.extraVolumes[0].configMap.items[0].path "../a" is invalid: must not contain '..'; ` +
				`spec.storage.extraVolumes[1].nfs.path "share" is invalid: must be an absolute path; ` +
				`spec.storage.extraVolumes[2].hostPath.type "Dir" is not supported: use DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice or BlockDevice`,
		},
		"VolumeMounts": {
			xr: with("storage.extraVolumes", jsonOf(`[{"name": "a", "emptyDir": {}}]`), "storage.extraVolumeMounts", jsonOf(`[{"name": "a", "mountPath": "/a", "subPath": "../x"}]`),
				"pod.initContainers", jsonOf(`[{"name": "init", "image": "busybox", "volumeMounts": [{"name": "a", "mountPath": "/a", "mountPropagation": "Bidirectional"}]}]`)),
			want: `invalid ProductionStack: spec.pod.initContainers[0].volumeMounts[0].mountPropagation Bidirectional is only for a privileged container: use HostToContainer or None, or make the container privileged; ` +
				`spec: storage.extraVolumeMounts[0].subPath "../x" is invalid: must not contain '..'`,
		},
		"PodAnnotations": {
			xr: with("pod", jsonOf(`{"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined", "container.apparmor.security.beta.kubernetes.io/vllm-engine": "runtime/default", "controller.kubernetes.io/pod-deletion-cost": "007"}}`)),
			want: `invalid ProductionStack: spec: pod.annotations[container.apparmor.security.beta.kubernetes.io/vllm-engine] names container "vllm-engine", which the pod does not have (its containers: vllm): name one of them; ` +
				`spec: pod.annotations[controller.kubernetes.io/pod-deletion-cost] "007" is invalid: must be a 32-bit integer without '+' or leading zeros, e.g. 100 or -5; ` +
				`spec: pod.annotations[seccomp.security.alpha.kubernetes.io/pod] "unconfined" says another profile than securityContext.seccompProfile: remove the annotation`,
		},
		"RouterPodAnnotations": {
			// The router runs with the RuntimeDefault seccomp profile.
			xr:   with("routerConfig.podAnnotations", map[string]any{"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}),
			want: `invalid ProductionStack: spec.routerConfig.podAnnotations[seccomp.security.alpha.kubernetes.io/pod] "unconfined" says another profile than securityContext.seccompProfile: remove the annotation`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fatal(t, run(t, req(t, tc.xr, nil, nil)))
			if got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// jsonOf reads a value written as JSON, as a spec holds it.
func jsonOf(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// TestAPIServerRulesAccept: values the API server takes compose, and go
// into the pods as written.
func TestAPIServerRulesAccept(t *testing.T) {
	xr := with(
		"scheduling", jsonOf(`{"tolerations": [{"operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
			"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "vllm"}}, "matchLabelKeys": ["pod-template-hash"]}}]}}}`),
		"pod", jsonOf(`{"securityContext": {"runAsUser": 1000, "fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}, "containerSecurityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
			"annotations": {"container.apparmor.security.beta.kubernetes.io/vllm": "runtime/default", "seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}}`),
		"storage.extraVolumes", jsonOf(`[{"name": "cfg", "projected": {"sources": [{"configMap": {"name": "cfg", "items": [{"key": "a", "path": "conf/a.yaml"}]}}, {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]`),
	)
	rsp := run(t, req(t, xr, nil, nil))
	d := desired(t, rsp, "engine-m", &appsv1.Deployment{})
	pod := d.Spec.Template.Spec
	if len(pod.Tolerations) != 2 || pod.Affinity == nil || pod.SecurityContext == nil || len(pod.SecurityContext.Sysctls) != 1 || pod.Containers[0].SecurityContext == nil {
		t.Errorf("the pod lost what the spec set: %+v", pod)
	}
}
