package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An edgeCase is a value of an optional block at the edge of what a user can
// write, and the layer that refuses it first, with its exact message (a
// pattern of matchMessage). A stack should be refused by the XRD (kubectl
// shows why) or by the function (a Fatal result: Crossplane applies nothing),
// not only when Crossplane applies a composed object: then the stack's other
// objects are applied, it runs half changed, and the error shows only in the
// XR's Synced condition.
type edgeCase struct {
	name   string
	mutate func(map[string]any)
	xrd    string // the API server refuses the XR
	fn     string // the function returns a Fatal result
	// applied: the API server or an upstream CRD refuses a composed object
	// ("<composition resource name>: <error>"; several joined by "; ").
	// Every such case is a gap between the XRD or the function and the
	// composed kinds, marked GAP: once the XRD or the function refuses the
	// value, its message moves to xrd or fn.
	applied string
}

var edgeCases = []edgeCase{
	{
		// The stack's pods declare no spec.resourceClaims, so the API server
		// refuses every container claim (found by FuzzComposedObjects).
		name:   "router resource claims",
		mutate: setSpec("routerConfig.resources", map[string]any{"claims": []any{map[string]any{"name": "gpu"}}}),
		fn:     `invalid ProductionStack: spec.routerConfig.resources.claims is not supported: it names resource claims of the pod (spec.resourceClaims, dynamic resource allocation), and the stack's pods declare none, so Kubernetes refuses any; remove it`,
	},
	{
		// ValidateContainerResourceName: a name without a domain is a
		// standard container resource (found by FuzzComposedObjects).
		name:   "router resource without a domain",
		mutate: setSpec("routerConfig.resources", map[string]any{"limits": map[string]any{"key": "1"}}),
		fn:     `invalid ProductionStack: spec.routerConfig.resources.limits[key] "key" is not a resource a container can request: use cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain such as nvidia.com/gpu`,
	},
	{
		name:   "router huge pages in part pages, alone",
		mutate: setSpec("routerConfig.resources", map[string]any{"requests": map[string]any{"hugepages-2Mi": "3Mi"}, "limits": map[string]any{"hugepages-2Mi": "3Mi"}}),
		fn: `invalid ProductionStack: spec.routerConfig.resources.limits[hugepages-2Mi] 3Mi is invalid: hugepages-2Mi takes a whole number of 2Mi pages; ` +
			`spec.routerConfig.resources.requests[hugepages-2Mi] 3Mi is invalid: hugepages-2Mi takes a whole number of 2Mi pages; ` +
			`spec.routerConfig.resources requests huge pages without cpu or memory: Kubernetes requires a cpu or memory request or limit beside huge pages`,
	},
	{
		// Huge pages in whole pages beside memory, and an extended resource
		// in whole units: the API server takes them.
		name:   "router huge pages and an extended resource",
		mutate: setSpec("routerConfig.resources", map[string]any{"requests": map[string]any{"memory": "1Gi", "hugepages-2Mi": "4Mi", "example.com/dev": "1"}, "limits": map[string]any{"memory": "1Gi", "hugepages-2Mi": "4Mi", "example.com/dev": "1"}}),
	},
	{
		name:   "scrape interval in Prometheus' order",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1m30s"}}),
	},
	{
		// The XRD's pattern is the Prometheus Operator's Duration: y w d h
		// m s ms, in that order, each at most once.
		name:   "scrape interval out of Prometheus' order",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "30s1m"}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.monitoring.serviceMonitor.interval: Invalid value: "30s1m": spec.monitoring.serviceMonitor.interval in body should match '^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$'`,
	},
	{
		name:   "scrape interval with a repeated unit",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1m1m"}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.monitoring.serviceMonitor.interval: Invalid value: "1m1m": spec.monitoring.serviceMonitor.interval in body should match '^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$'`,
	},
	{
		// Prometheus takes days, and so does the XRD.
		name:   "scrape interval in days",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "1d"}}),
	},
	{
		// The pattern allows 0s; the function refuses a zero interval.
		name:   "scrape interval of zero",
		mutate: setSpec("monitoring", map[string]any{"serviceMonitor": map[string]any{"interval": "0s"}}),
		fn:     `invalid ProductionStack: spec.monitoring.serviceMonitor.interval "0s" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`,
	},
	{
		// The XRD has the Gateway API's pattern of a listener name.
		name:   "HTTPRoute sectionName in upper case",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "sectionName": "HTTPS"}}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.routerConfig.httpRoute.parentRefs[0].sectionName: Invalid value: "HTTPS": spec.routerConfig.httpRoute.parentRefs[0].sectionName in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`,
	},
	{
		// The XRD has the pattern of a namespace name.
		name:   "HTTPRoute Gateway namespace in upper case",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public", "namespace": "Gateways"}}}),
		xrd:    `ProductionStack.serving.vllm.ai "test-stack" is invalid: spec.routerConfig.httpRoute.parentRefs[0].namespace: Invalid value: "Gateways": spec.routerConfig.httpRoute.parentRefs[0].namespace in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`,
	},
	{
		// The function checks paths as Kubernetes and the Gateway API do.
		name:   "HTTPRoute path with //",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1//chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.httpRoute.path "/v1//chat" must not contain "//"`,
	},
	{
		name:   "HTTPRoute path with a space",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "path": "/v1 chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.httpRoute.path "/v1 chat" has a character a URL path cannot hold unescaped: use letters, digits and -._~!$&'()*+,;=:@/, or %XX escapes`,
	},
	{
		name:   "HTTPRoute with a wildcard and an IP host name",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}}, "hostnames": []any{"*.example.com", "10.0.0.1"}}),
	},
	{
		name:   "Ingress path with //",
		mutate: setSpec("routerConfig.ingress", map[string]any{"path": "/v1//chat"}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.path "/v1//chat" must not contain "//"`,
	},
	{
		name:   "Ingress path ending in /.",
		mutate: setSpec("routerConfig.ingress", map[string]any{"path": "/v1/."}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.path "/v1/." must not end with "/."`,
	},
	{
		// An Ingress takes a wildcard host, and so does the function.
		name:   "Ingress wildcard host",
		mutate: setSpec("routerConfig.ingress", map[string]any{"host": "*.example.com"}),
	},
	{
		name:   "Ingress annotation key with a space",
		mutate: setSpec("routerConfig.ingress", map[string]any{"annotations": map[string]any{"nginx timeout": "600"}}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.annotations key "nginx timeout" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	},
	{
		name:   "NetworkPolicy ipBlock with a bad CIDR",
		mutate: setSpec("networkPolicy", map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/33"}}}}),
		fn:     `invalid ProductionStack: spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.0/33" is not a CIDR: use a network such as 10.0.0.0/16 or 2001:db8::/64`,
	},
	// tools/kubediff found the API server or the Gateway API CRD refusing
	// these in composed objects; the XRD takes them, the function refuses.
	{
		name:   "NetworkPolicy ipBlock CIDR with bits beyond its prefix",
		mutate: setSpec("networkPolicy", map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/8"}}}}),
		fn:     `invalid ProductionStack: spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.1/8" has bits set beyond its prefix length: use 10.0.0.0/8`,
	},
	{
		name:   "NetworkPolicy ipBlock IPv4-mapped IPv6 CIDR",
		mutate: setSpec("networkPolicy", map[string]any{"allowFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "::ffff:10.0.0.0/104"}}}}),
		fn:     `invalid ProductionStack: spec.networkPolicy.allowFrom[0].ipBlock.cidr "::ffff:10.0.0.0/104" is an IPv4-mapped IPv6 network: use the IPv4 network 10.0.0.0/8`,
	},
	{
		name:   "Ingress host that is an IP address",
		mutate: setSpec("routerConfig.ingress", map[string]any{"host": "10.0.0.1"}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.host "10.0.0.1" is an IP address: an Ingress matches host names only; use a DNS name, or leave host unset to match every host`,
	},
	{
		name:   "Ingress class annotation other than className",
		mutate: setSpec("routerConfig.ingress", map[string]any{"className": "nginx", "annotations": map[string]any{"kubernetes.io/ingress.class": "traefik"}}),
		fn:     `invalid ProductionStack: spec.routerConfig.ingress.annotations[kubernetes.io/ingress.class] "traefik" must match spec.routerConfig.ingress.className "nginx": remove the annotation, or give both the same class`,
	},
	{
		name:   "HTTPRoute with one Gateway twice, one without sectionName",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}, map[string]any{"name": "public", "sectionName": "https"}}}),
		fn:     `invalid ProductionStack: spec.routerConfig.httpRoute.parentRefs[1] refers to Gateway "public" as parentRefs[0] does: give each reference to the same Gateway its own sectionName`,
	},
	{
		name: "HTTPRoute wildcard hostname of 255 characters",
		mutate: setSpec("routerConfig.httpRoute", map[string]any{"parentRefs": []any{map[string]any{"name": "public"}},
			"hostnames": []any{"*." + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("a", 61)}}),
		fn: `invalid ProductionStack: spec.routerConfig.httpRoute.hostnames[0] "*.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" (255 characters in all) is too long: the Gateway API allows at most 253 characters, a wildcard's "*." included`,
	},
	{
		name:   "ReadWriteOncePod with another access mode",
		mutate: setSpec("storage", map[string]any{"enabled": true, "size": "1Gi", "accessModes": []any{"ReadWriteOncePod", "ReadWriteOnce"}}),
		fn:     `invalid ProductionStack: spec.storage.accessModes [ReadWriteOncePod ReadWriteOnce] is invalid: ReadWriteOncePod cannot be combined with other access modes; use [ReadWriteOncePod] alone`,
	},
	{
		name:   "PDB minAvailable above 100%",
		mutate: setSpec("podDisruptionBudget", map[string]any{"minAvailable": "150%"}),
		fn:     `invalid ProductionStack: spec.podDisruptionBudget.minAvailable "150%" is invalid: use a number such as 1 or a percentage such as "25%"`,
	},
	{
		name:   "KEDA threshold 0",
		mutate: setSpec("autoscaling", map[string]any{"maxReplicas": int64(2), "prometheusAddress": "http://prometheus:9090", "threshold": "0"}),
		fn:     `invalid ProductionStack: spec.autoscaling.threshold "0" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`,
	},
	{
		name:   "cache server with 0 replicas",
		mutate: setSpec("lmcacheConfig", map[string]any{"server": map[string]any{"replicas": int64(0)}}),
	},
	// The Kubernetes types a spec carries as they are: the XRD takes what
	// their schema allows, the function what the API server takes
	// (internal/kubeapi), the edges of both sides.
	{
		name:   "tolerations of every taint and of NoExecute for a while",
		mutate: setSpecJSON("scheduling", `{"tolerations": [{"operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}`),
	},
	{
		name:   "toleration operator Foo",
		mutate: setSpecJSON("scheduling", `{"tolerations": [{"key": "nvidia.com/gpu", "operator": "Foo"}]}`),
		fn:     `invalid ProductionStack: spec.scheduling.tolerations[0].operator "Foo" is not supported: use Equal or Exists`,
	},
	{
		name:   "toleration Exists with a value",
		mutate: setSpecJSON("scheduling", `{"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "value": "present"}]}`),
		fn:     `invalid ProductionStack: spec.scheduling.tolerations[0].value must be empty when operator is Exists: remove value, or use operator: Equal`,
	},
	{
		name:   "toleration effect Sometimes",
		mutate: setSpecJSON("scheduling", `{"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "Sometimes"}]}`),
		fn:     `invalid ProductionStack: spec.scheduling.tolerations[0].effect "Sometimes" is not supported: use NoSchedule, PreferNoSchedule or NoExecute`,
	},
	{
		name:   "tolerationSeconds without NoExecute",
		mutate: setSpecJSON("scheduling", `{"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}]}`),
		fn:     `invalid ProductionStack: spec.scheduling.tolerations[0].effect "NoSchedule" must be NoExecute when tolerationSeconds is set (only NoExecute taints evict): set effect: NoExecute or remove tolerationSeconds`,
	},
	{
		// Gt with one value; a preferred term may hold any label value;
		// matchLabelKeys with a selector.
		name: "affinity at the edges the API server takes",
		mutate: setSpecJSON("scheduling", `{"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu.memory", "operator": "Gt", "values": ["40000"]}]}]},
			"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["not a label value"]}]}}]},
			"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "serving-engine"}}, "matchLabelKeys": ["pod-template-hash"]}}]}}}`),
	},
	{
		name:   "node selector requirement In without values",
		mutate: setSpecJSON("scheduling", `{"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": []}]}]}}}}`),
		fn:     `invalid ProductionStack: spec.scheduling.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values is required when operator is In: give at least one value, or use Exists`,
	},
	{
		name:   "node selector requirement Exists with values",
		mutate: setSpecJSON("scheduling", `{"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["a100"]}]}]}}}}`),
		fn:     `invalid ProductionStack: spec.scheduling.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values must be empty when operator is Exists: remove values, or use In`,
	},
	{
		name:   "preferred node affinity weight 101",
		mutate: setSpecJSON("scheduling", `{"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}}`),
		fn:     `invalid ProductionStack: spec.scheduling.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 101 is invalid: must be from 1 to 100`,
	},
	{
		name:   "pod anti-affinity with an empty topologyKey",
		mutate: setSpecJSON("scheduling", `{"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "", "labelSelector": {"matchLabels": {"app": "vllm"}}}]}}}`),
		fn:     `invalid ProductionStack: spec.scheduling.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey is required: name the node label that groups nodes, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone`,
	},
	{
		name:   "router toleration with an invalid key",
		mutate: setSpecJSON("routerConfig.scheduling", `{"tolerations": [{"key": "Bad Key", "operator": "Exists"}]}`),
		fn:     `invalid ProductionStack: spec.routerConfig.scheduling.tolerations[0].key "Bad Key" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
	},
	{
		name:   "cache server pod affinity weight 0",
		mutate: setSpecJSON("lmcacheConfig.server.scheduling", `{"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}}`),
		fn:     `invalid ProductionStack: spec.lmcacheConfig.server.scheduling.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 0 is invalid: must be from 1 to 100`,
	},
	{
		// A sysctl with '/', seLinuxChangePolicy MountOption (SELinuxMount
		// is GA in 1.37), SYS_ADMIN (only CAP_SYS_ADMIN is refused with
		// allowPrivilegeEscalation: false).
		name:   "security contexts at the edges the API server takes",
		mutate: setSpecJSON("pod", `{"securityContext": {"runAsUser": 0, "fsGroup": 2147483647, "sysctls": [{"name": "kernel/shm_rmid_forced", "value": "1"}], "seccompProfile": {"type": "RuntimeDefault"}, "seLinuxChangePolicy": "MountOption"}, "containerSecurityContext": {"allowPrivilegeEscalation": false, "capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}}`),
	},
	{
		// A disaggregated model's pods in the host's PID and IPC
		// namespaces, with a sysctl of the network namespace: the API
		// server takes them.
		name: "host PID and IPC namespaces with a network sysctl",
		mutate: both(disaggregatedSeed, setSpecJSON("disaggregation", `{"hostPIDAndIPC": true}`),
			setSpecJSON("pod", `{"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}}`)),
	},
	{
		// ValidateHostSysctl: a pod in the host's IPC namespace may not set
		// that namespace's sysctls.
		name: "host IPC namespace with an IPC sysctl",
		mutate: both(disaggregatedSeed, setSpecJSON("disaggregation", `{"hostPIDAndIPC": true}`),
			setSpecJSON("pod", `{"securityContext": {"sysctls": [{"name": "kernel/shm_rmid_forced", "value": "1"}]}}`)),
		fn: `invalid ProductionStack: spec.pod.securityContext.sysctls[0].name "kernel/shm_rmid_forced" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`,
	},
	{
		name:   "seccompProfile Localhost without localhostProfile",
		mutate: setSpecJSON("pod", `{"securityContext": {"seccompProfile": {"type": "Localhost"}}}`),
		fn:     `invalid ProductionStack: spec.pod.securityContext.seccompProfile.localhostProfile is required when type is Localhost: give the profile's path below the kubelet's seccomp directory, e.g. profiles/vllm.json`,
	},
	{
		name:   "negative runAsUser",
		mutate: setSpecJSON("pod", `{"securityContext": {"runAsUser": -1}}`),
		fn:     `invalid ProductionStack: spec.pod.securityContext.runAsUser -1 is invalid: must be a user ID from 0 to 2147483647`,
	},
	{
		name:   "sysctl name with a '!'",
		mutate: setSpecJSON("pod", `{"securityContext": {"sysctls": [{"name": "net.core.somaxconn!", "value": "1"}]}}`),
		fn:     `invalid ProductionStack: spec.pod.securityContext.sysctls[0].name "net.core.somaxconn!" is not a sysctl name: use at most 253 characters, segments of lowercase letters, digits, '-' and '_' joined by '.' or '/', e.g. net.core.somaxconn`,
	},
	{
		name:   "privileged container without privilege escalation",
		mutate: setSpecJSON("pod", `{"containerSecurityContext": {"allowPrivilegeEscalation": false, "privileged": true}}`),
		fn:     `invalid ProductionStack: spec.pod.containerSecurityContext.allowPrivilegeEscalation cannot be false with privileged: true (a privileged container escalates): remove one of them`,
	},
	{
		name:   "procMount Unmasked in the host's user namespace",
		mutate: setSpecJSON("pod", `{"containerSecurityContext": {"procMount": "Unmasked"}}`),
		fn:     `invalid ProductionStack: spec.pod.containerSecurityContext.procMount Unmasked needs a pod with hostUsers: false, which the stack does not set: use Default or remove procMount`,
	},
	{
		name:   "extra volumes at the edges the API server takes",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "conf/a..yaml"}]}}, {"name": "host", "hostPath": {"path": "/mnt/models", "type": ""}}]`),
	},
	{
		name:   "configMap item path with ..",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "../a"}]}}]`),
		fn:     `invalid ProductionStack: spec.storage.extraVolumes[0].configMap.items[0].path "../a" is invalid: must not contain '..'`,
	},
	{
		name:   "configMap defaultMode above 0777",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 1000}}]`),
		fn:     `invalid ProductionStack: spec.storage.extraVolumes[0].configMap.defaultMode 1000 is invalid: must be a file mode from 0 to 0777 (octal; 511 in decimal), e.g. 0644 (420 in decimal)`,
	},
	{
		name:   "hostPath type Dir",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "host", "hostPath": {"path": "/mnt/models", "type": "Dir"}}]`),
		fn:     `invalid ProductionStack: spec.storage.extraVolumes[0].hostPath.type "Dir" is not supported: use DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice or BlockDevice`,
	},
	{
		name:   "nfs with a relative path",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "nfs", "nfs": {"server": "nfs.example.com", "path": "models"}}]`),
		fn:     `invalid ProductionStack: spec.storage.extraVolumes[0].nfs.path "models" is invalid: must be an absolute path`,
	},
	{
		name: "extra volume mount with a subPath through ..",
		mutate: both(setSpecJSON("storage.extraVolumes", `[{"name": "scratch", "emptyDir": {}}]`),
			setSpecJSON("storage.extraVolumeMounts", `[{"name": "scratch", "mountPath": "/scratch", "subPath": "../etc"}]`)),
		fn: `invalid ProductionStack: spec: storage.extraVolumeMounts[0].subPath "../etc" is invalid: must not contain '..'`,
	},
	{
		// The router runs with the RuntimeDefault seccomp profile; the API
		// server refuses an annotation that says another.
		name:   "router pod annotation of another seccomp profile",
		mutate: setSpecJSON("routerConfig.podAnnotations", `{"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}`),
		fn:     `invalid ProductionStack: spec.routerConfig.podAnnotations[seccomp.security.alpha.kubernetes.io/pod] "unconfined" says another profile than securityContext.seccompProfile: remove the annotation`,
	},
	{
		name:   "pod annotations that match the pod's settings",
		mutate: setSpecJSON("pod", `{"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default", "controller.kubernetes.io/pod-deletion-cost": "-5"}}`),
	},
	{
		// The API server would make it an emptyDir; the function refuses
		// it (a misspelled source is pruned by the XRD).
		name:   "extra volume without a source",
		mutate: setSpecJSON("storage.extraVolumes", `[{"name": "x"}]`),
		fn:     `invalid ProductionStack: spec.storage.extraVolumes[0] sets 0 volume sources: set exactly one, such as persistentVolumeClaim, configMap, secret or emptyDir`,
	},
	{
		// The longest drain the XRD takes: a preStop sleep of 3900 s (the
		// seed's vLLM 0.8.3 drains in it) and a grace period of 3920 s.
		name:   "longest drain",
		mutate: setSpecJSON("shutdown", `{"drainSeconds": 3600, "routingDelaySeconds": 300}`),
	},
	{
		// A model cache filled by a Job (storage.prefetch): the first
		// reconcile composes the claim and the Job, the engines wait.
		name:   "prefetch",
		mutate: setSpecJSON("storage", `{"accessModes": ["ReadWriteMany"], "prefetch": {}}`),
	},
	{
		// No drain at all: no preStop sleep (a zero sleep is refused before
		// Kubernetes 1.33) and Kubernetes' default grace period.
		name:   "no drain",
		mutate: setSpecJSON("shutdown", `{"drainSeconds": 0, "routingDelaySeconds": 0}`),
	},
}

// setSpecJSON sets a field of the spec to a value written as JSON.
// disaggregatedSeed makes the seed a stack that can be disaggregated: vLLM
// 0.12.0 (without the seed's V0 engine) and router 0.1.12.
func disaggregatedSeed(xr map[string]any) {
	setSpec("vllmConfig.image", "vllm/vllm-openai:v0.12.0")(xr)
	unstructured.RemoveNestedField(xr, "spec", "vllmConfig", "v1")
	setSpec("routerConfig.image", "lmcache/lmstack-router:v0.1.12")(xr)
}

func setSpecJSON(path, js string) func(map[string]any) {
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		panic(fmt.Sprintf("%s: %v", path, err))
	}
	return setSpec(path, v)
}

// TestEdgeValues: for each edge value, the first layer that refuses the
// stack, and its message. Nothing is applied: the XR is created and every
// composed object applied with a server-side dry run.
func TestEdgeValues(t *testing.T) {
	ns := namespace(t, "edges")
	admin, _ := client(t, cp.Config())
	input := compositionInput(t, "../composition/composition.yaml")
	for _, tc := range edgeCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			m := readYAML(t, "../example/xr.yaml")
			setSpec("storage.enabled", false)(m)
			tc.mutate(m)
			xr := &unstructured.Unstructured{Object: m}
			xr.SetNamespace(ns)
			// The API server returns the XR with the schema's defaults.
			got, err := admin.Resource(xrGVR).Namespace(ns).Create(ctx, xr, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			if !refused(t, "the XRD", err, tc.xrd) || err != nil {
				return
			}
			rsp, fatal := tryRender(t, got.Object, input, nil)
			var fnErr error
			if fatal != "" {
				fnErr = stringError(fatal)
			}
			if !refused(t, "the function", fnErr, tc.fn) || fnErr != nil {
				return
			}
			var errs []string
			for _, k := range desiredKeys(rsp) {
				o := composed(got, k, rsp.GetDesired().GetResources()[k])
				if _, err := apply(ctx, t, admin, o, composedFieldOwner(got), true); err != nil {
					errs = append(errs, k+": "+err.Error())
				}
			}
			var applyErr error
			if len(errs) > 0 {
				applyErr = stringError(strings.Join(errs, "; "))
			}
			refused(t, "applying the composed objects", applyErr, tc.applied)
		})
	}
}

// refused checks that a layer refused with a message matching want, or
// accepted when want is empty. It reports whether it did as expected.
func refused(t *testing.T, layer string, err error, want string) bool {
	t.Helper()
	switch {
	case err == nil && want == "":
		return true
	case err == nil:
		t.Errorf("%s accepts it, want refused with\n  %s", layer, want)
	case want == "":
		t.Errorf("%s refuses it:\n  %v", layer, err)
	case !matchMessage(want, err.Error()):
		t.Errorf("%s refuses it with\n  %v\nwant\n  %s", layer, err, want)
	default:
		return true
	}
	return false
}

type stringError string

func (e stringError) Error() string { return string(e) }
