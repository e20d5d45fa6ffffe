package kubeapi

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// check decodes a value's JSON into T and checks it; a test case is the
// JSON a user writes, so the table reads like a spec.
func check[T any](fn func(T) []Problem) func(string) ([]Problem, error) {
	return func(j string) ([]Problem, error) {
		var v T
		if err := json.Unmarshal([]byte(j), &v); err != nil {
			return nil, err
		}
		return fn(v), nil
	}
}

var (
	tolerations  = check(Tolerations)
	affinity     = check(Affinity)
	podSC        = check(PodSecurityContext)
	hostIPCSC    = check(HostIPCSysctls)
	containerSC  = check(SecurityContext)
	volume       = check(func(v corev1.Volume) []Problem { return VolumeSource(v.Name, v.VolumeSource) })
	mount        = check(func(m corev1.VolumeMount) []Problem { return VolumeMount(m, m.Name == "privileged") })
	annotations  = check(func(t corev1.PodTemplateSpec) []Problem { return PodAnnotations(t.Annotations, &t.Spec) })
	ipBlock      = check(IPBlock)
	ingressHost  = check(IngressHost)
	accessModes  = check(AccessModes)
	resources    = check(ContainerResources)
	ingressClass = check(func(i networkingv1.Ingress) []Problem { return IngressClass(i.Annotations, i.Spec.IngressClassName) })
)

// TestRules: each case is a value the API server of Kubernetes 1.37 accepts
// (want empty) or refuses (want the problems, at "x"), with the upstream
// function of pkg/apis/core/validation that decides it.
func TestRules(t *testing.T) {
	cases := []struct {
		name string
		fn   func(string) ([]Problem, error)
		json string
		want []string
	}{
		// ValidateTolerations
		{"TolerationExists", tolerations, `[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]`, nil},
		{"TolerationEqualDefault", tolerations, `[{"key": "pool", "value": "gpu"}, {"operator": "Exists"}]`, nil},
		{"TolerationSecondsNoExecute", tolerations, `[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]`, nil},
		{"TolerationOperatorFoo", tolerations, `[{"key": "k", "operator": "Foo"}]`, []string{`x[0].operator "Foo" is not supported: use Equal or Exists`}},
		{"TolerationOperatorLt", tolerations, `[{"key": "k", "operator": "Lt", "value": "5"}]`, []string{`x[0].operator "Lt" needs the alpha feature gate TaintTolerationComparisonOperators, off by default: use Equal or Exists`}},
		{"TolerationExistsWithValue", tolerations, `[{"key": "k", "operator": "Exists", "value": "v"}]`, []string{`x[0].value must be empty when operator is Exists: remove value, or use operator: Equal`}},
		{"TolerationEffectSometimes", tolerations, `[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]`, []string{`x[0].effect "Sometimes" is not supported: use NoSchedule, PreferNoSchedule or NoExecute`}},
		{"TolerationSecondsWithoutNoExecute", tolerations, `[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 1}]`,
			[]string{`x[0].effect "NoSchedule" must be NoExecute when tolerationSeconds is set (only NoExecute taints evict): set effect: NoExecute or remove tolerationSeconds`}},
		{"TolerationEmptyKeyEqual", tolerations, `[{"value": "v"}]`, []string{`x[0].operator must be Exists when key is empty (an empty key with Exists tolerates every taint): set key, or operator: Exists`}},
		{"TolerationBadKeyAndValue", tolerations, `[{"key": "a b", "value": "-v"}]`, []string{
			`x[0].key "a b" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`x[0].value "-v" is not a valid label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},

		// validateNodeAffinity, ValidateNodeSelector*, ValidatePreferredSchedulingTerms
		{"NodeAffinity", affinity, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}, {"key": "x", "operator": "Exists"}, {"key": "n", "operator": "Gt", "values": ["3"]}], "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]},
			"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["not a label value"]}]}}]}}`, nil},
		{"NodeSelectorNoTerms", affinity, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}`,
			[]string{`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms is required: give at least one node selector term`}},
		{"NodeSelectorRequirements", affinity, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]}, {"key": "c", "operator": "Gt", "values": ["1", "2"]}, {"key": "-d", "operator": "Near", "values": ["bad value"]}]}]}}}`, []string{
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values is required when operator is In: give at least one value, or use Exists`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values must be empty when operator is Exists: remove values, or use In`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values must hold exactly one value when operator is Gt, an integer to compare the label with`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator "Near" is not supported: use In, NotIn, Exists, DoesNotExist, Gt or Lt`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].key "-d" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].values[0] "bad value" is not a valid label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"NodeFieldSelector", affinity, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}, {"key": "metadata.name", "operator": "Exists", "values": ["a", "b"]}]}]}}}`, []string{
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key "metadata.uid" is not a node field selector key: use metadata.name`,
			`x.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].operator "Exists" is not supported for a node field: use In or NotIn`}},
		{"PreferredWeight", affinity, `{"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}, {"weight": 101, "preference": {}}]}}`, []string{
			`x.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 0 is invalid: must be from 1 to 100`,
			`x.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].weight 101 is invalid: must be from 1 to 100`}},

		// validatePodAffinity, validatePodAntiAffinity, validatePodAffinityTerm
		{"PodAntiAffinity", affinity, `{"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "vllm"}}, "matchLabelKeys": ["pod-template-hash"], "namespaces": ["ml"]}}]},
			"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "topology.kubernetes.io/zone", "namespaceSelector": {}}]}}`, nil},
		{"PodAffinityTerm", affinity, `{"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}, "namespaces": ["Bad_NS"], "matchLabelKeys": ["app", "b"], "mismatchLabelKeys": ["b"]}]}}`, []string{
			`x.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn'`,
			`x.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0] "Bad_NS" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`x.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0] "app" is also a key of labelSelector: remove it from one of them`,
			`x.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[1] "b" is also in mismatchLabelKeys: remove it from one of them`,
			`x.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey is required: name the node label that groups nodes, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone`}},
		{"PodAffinityLabelKeysWithoutSelector", affinity, `{"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {"topologyKey": "a/b/c", "mismatchLabelKeys": ["x"]}}]}}`, []string{
			`x.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 101 is invalid: must be from 1 to 100`,
			`x.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.mismatchLabelKeys must not be set without labelSelector: set labelSelector, or remove mismatchLabelKeys`,
			`x.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey "a/b/c" is not a valid label key: a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`}},

		// validatePodSpecSecurityContext
		{"PodSecurityContext", podSC, `{"runAsUser": 1000, "runAsGroup": 0, "fsGroup": 2000, "supplementalGroups": [3000], "runAsNonRoot": true, "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "RuntimeDefault"},
			"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}, {"name": "kernel/shm_rmid_forced", "value": "1"}], "supplementalGroupsPolicy": "Strict", "seLinuxChangePolicy": "MountOption", "appArmorProfile": {"type": "Localhost", "localhostProfile": "vllm"}}`, nil},
		// ValidateHostSysctl with hostIPC: the IPC namespace's sysctls, by
		// name or prefix, written with '.' or '/' (NormalizeName), up to a
		// '*'; others pass.
		{"HostIPCSysctls", hostIPCSC, `{"sysctls": [{"name": "kernel.shm_rmid_forced"}, {"name": "kernel/msgmax"}, {"name": "fs.mqueue.msg_max"}, {"name": "kernel.sem*"},
			{"name": "net.core.somaxconn"}, {"name": "kernel.domainname"}, {"name": "fs.mqueue"}, {"name": "kernel.shm_next_id"}]}`, []string{
			`x.sysctls[0].name "kernel.shm_rmid_forced" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`,
			`x.sysctls[1].name "kernel/msgmax" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`,
			`x.sysctls[2].name "fs.mqueue.msg_max" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`,
			`x.sysctls[3].name "kernel.sem*" belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC`}},
		{"PodSecurityContextIDs", podSC, `{"runAsUser": -1, "runAsGroup": 2147483648, "fsGroup": -5, "supplementalGroups": [1, -1]}`, []string{
			`x.fsGroup -5 is invalid: must be a group ID from 0 to 2147483647`,
			`x.runAsUser -1 is invalid: must be a user ID from 0 to 2147483647`,
			`x.runAsGroup 2147483648 is invalid: must be a group ID from 0 to 2147483647`,
			`x.supplementalGroups[1] -1 is invalid: must be a group ID from 0 to 2147483647`}},
		{"Sysctls", podSC, `{"sysctls": [{"name": "", "value": "1"}, {"name": "Net.Core", "value": "1"}, {"name": "a.b", "value": "1"}, {"name": "a.b", "value": "2"}]}`, []string{
			`x.sysctls[0].name is required: name a sysctl, e.g. net.core.somaxconn`,
			`x.sysctls[1].name "Net.Core" is not a sysctl name: use at most 253 characters, segments of lowercase letters, digits, '-' and '_' joined by '.' or '/', e.g. net.core.somaxconn`,
			`x.sysctls[3].name "a.b" is set twice: remove one`}},
		{"PodPolicies", podSC, `{"fsGroupChangePolicy": "Sometimes", "supplementalGroupsPolicy": "Union", "seLinuxChangePolicy": "Never"}`, []string{
			`x.fsGroupChangePolicy "Sometimes" is not supported: use Always or OnRootMismatch`,
			`x.supplementalGroupsPolicy "Union" is not supported: use Merge or Strict`,
			`x.seLinuxChangePolicy "Never" is not supported: use MountOption or Recursive`}},
		{"SeccompLocalhost", podSC, `{"seccompProfile": {"type": "Localhost"}}`, []string{
			`x.seccompProfile.localhostProfile is required when type is Localhost: give the profile's path below the kubelet's seccomp directory, e.g. profiles/vllm.json`}},
		{"SeccompPaths", podSC, `{"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/../x.json"}}`, []string{
			`x.seccompProfile.localhostProfile "/etc/../x.json" is invalid: must be a relative path`,
			`x.seccompProfile.localhostProfile "/etc/../x.json" is invalid: must not contain '..'`}},
		{"SeccompTypes", containerSC, `{"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "a.json"}, "appArmorProfile": {"type": "Strict"}}`, []string{
			`x.seccompProfile.localhostProfile can only be set when type is Localhost: remove it, or use type: Localhost`,
			`x.appArmorProfile.type "Strict" is not supported: use RuntimeDefault, Unconfined or Localhost`}},
		{"AppArmorLocalhost", podSC, `{"appArmorProfile": {"type": "Localhost", "localhostProfile": " vllm"}, "seccompProfile": {}}`, []string{
			`x.seccompProfile.type is required when seccompProfile is set: use RuntimeDefault, Unconfined or Localhost`,
			`x.appArmorProfile.localhostProfile " vllm" is invalid: must not be padded with whitespace`}},
		{"WindowsOptions", podSC, `{"windowsOptions": {"gmsaCredentialSpecName": "Spec", "gmsaCredentialSpec": "", "runAsUserName": "a\\b\\c", "hostProcess": true}}`, []string{
			`x.windowsOptions.gmsaCredentialSpecName "Spec" is not the name of a GMSACredentialSpec: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`x.windowsOptions.gmsaCredentialSpec is 0 bytes: must be from 1 byte to 64 KiB`,
			`x.windowsOptions.runAsUserName "a\\b\\c" is invalid: must contain at most one backslash, between a domain and a user`,
			`x.windowsOptions.hostProcess needs a pod with hostNetwork: true, which the stack does not set: remove hostProcess`}},
		{"WindowsUserNames", podSC, `{"windowsOptions": {"runAsUserName": "CORP\\svc-vllm", "hostProcess": false}}`, nil},
		{"WindowsUserNameChars", containerSC, `{"windowsOptions": {"runAsUserName": "a@b"}}`, []string{
			`x.windowsOptions.runAsUserName "a@b" is invalid: the user must not contain any of "/\:;|=,+*?<>@[]`}},

		// ValidateSecurityContext
		{"ContainerSecurityContext", containerSC, `{"runAsUser": 0, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_ADMIN"]}, "procMount": "Default", "privileged": false}`, nil},
		{"PrivilegedEscalation", containerSC, `{"allowPrivilegeEscalation": false, "privileged": true, "capabilities": {"add": ["CAP_SYS_ADMIN"]}, "procMount": "Unmasked", "runAsGroup": -1}`, []string{
			`x.runAsGroup -1 is invalid: must be a group ID from 0 to 2147483647`,
			`x.procMount Unmasked needs a pod with hostUsers: false, which the stack does not set: use Default or remove procMount`,
			`x.allowPrivilegeEscalation cannot be false with privileged: true (a privileged container escalates): remove one of them`,
			`x.capabilities.add[0] CAP_SYS_ADMIN cannot be added with allowPrivilegeEscalation: false: remove one of them`}},
		{"ProcMountFoo", containerSC, `{"procMount": "Masked"}`, []string{`x.procMount "Masked" is not supported: use Default`}},

		// validateVolumeSource
		{"VolumesAccepted", volume, `{"name": "v", "configMap": {"name": "cfg", "defaultMode": 420, "items": [{"key": "a", "path": "dir/a..b", "mode": 511}]}}`, nil},
		{"VolumeNone", volume, `{"name": "v"}`, nil}, // SetDefaults_Volume makes it an emptyDir
		{"ConfigMapItems", volume, `{"name": "v", "configMap": {"name": "", "defaultMode": 512, "items": [{"key": "", "path": "/etc/a", "mode": -1}, {"key": "b", "path": "../b"}, {"key": "c", "path": "..c"}, {"key": "d", "path": ""}]}}`, []string{
			`x.configMap.name is required: set the ConfigMap's name`,
			`x.configMap.defaultMode 512 is invalid: must be a file mode from 0 to 0777 (octal; 511 in decimal), e.g. 0644 (420 in decimal)`,
			`x.configMap.items[0].key is required: set the key to project`,
			`x.configMap.items[0].path "/etc/a" is invalid: must be a relative path`,
			`x.configMap.items[0].mode -1 is invalid: must be a file mode from 0 to 0777 (octal; 511 in decimal), e.g. 0644 (420 in decimal)`,
			`x.configMap.items[1].path "../b" is invalid: must not contain '..'`,
			`x.configMap.items[2].path "..c" is invalid: must not start with '..'`,
			`x.configMap.items[3].path is required: set the file's path, relative to the mount`}},
		{"SecretEmptyDir", volume, `{"name": "v", "secret": {"secretName": "", "items": [{"key": "k", "path": "a/../b"}]}, "emptyDir": {"sizeLimit": "-1"}}`, []string{
			`x sets 2 volume sources: set exactly one, such as persistentVolumeClaim, configMap, secret or emptyDir`,
			`x.emptyDir.sizeLimit -1 is invalid: must be 0 or more`,
			`x.secret.secretName is required: set the Secret's name`,
			`x.secret.items[0].path "a/../b" is invalid: must not contain '..'`}},
		{"HostPath", volume, `{"name": "v", "hostPath": {"path": "/models/../etc", "type": "Dir"}}`, []string{
			`x.hostPath.path "/models/../etc" is invalid: must not contain '..'`,
			`x.hostPath.type "Dir" is not supported: use DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice or BlockDevice`}},
		{"HostPathAccepted", volume, `{"name": "v", "hostPath": {"path": "relative/ok", "type": ""}}`, nil},
		{"NFS", volume, `{"name": "v", "nfs": {"server": "", "path": "exports"}}`, []string{
			`x.nfs.server is required: set the NFS server's host name or IP address`,
			`x.nfs.path "exports" is invalid: must be an absolute path`}},
		{"CSI", volume, `{"name": "v", "csi": {"driver": "CSI.Example.com", "nodePublishSecretRef": {"name": "Bad"}}}`, []string{
			`x.csi.nodePublishSecretRef.name "Bad" is not a Secret name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"CSIDriver", volume, `{"name": "v", "csi": {"driver": ""}}`, []string{`x.csi.driver is required: set the CSI driver's name, e.g. csi.example.com`}},
		{"Image", volume, `{"name": "v", "image": {"reference": "", "pullPolicy": "Sometimes"}}`, []string{
			`x.image.reference is required: set an image reference`,
			`x.image.pullPolicy "Sometimes" is not supported: use Always, IfNotPresent or Never`}},
		{"DownwardAPI", volume, `{"name": "v", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}, {"path": "app", "fieldRef": {"fieldPath": "metadata.labels['app']"}},
			{"path": "cpu", "resourceFieldRef": {"containerName": "vllm", "resource": "limits.cpu", "divisor": "1m"}}]}}`, nil},
		{"DownwardAPIRefused", volume, `{"name": "v", "downwardAPI": {"items": [{"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}, {"path": "m", "resourceFieldRef": {"resource": "limits.memory"}}, {"path": "c", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "2"}}, {"path": "n"}]}}`, []string{
			`x.downwardAPI.items[0].fieldRef.fieldPath "status.podIP" is not supported: use metadata.annotations, metadata.labels, metadata.name, metadata.namespace or metadata.uid`,
			`x.downwardAPI.items[1].resourceFieldRef.containerName is required in a volume: name the container whose resources the file holds`,
			`x.downwardAPI.items[2].resourceFieldRef.divisor 2 is not supported for limits.cpu: use 1m or 1`,
			`x.downwardAPI.items[3] sets neither fieldRef nor resourceFieldRef: set one of them`}},
		{"Projected", volume, `{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}, {"configMap": {"name": "c", "items": [{"key": "a", "path": "a"}]}}, {"secret": {"name": "s", "items": [{"key": "a", "path": "a"}]}}, {"configMap": {"name": "c"}, "secret": {"name": "s"}}]}}`, []string{
			`x.projected.sources[0].serviceAccountToken.expirationSeconds 60 is invalid: must be from 600 (10 minutes) to 4294967296 (2^32)`,
			`x.projected.sources[2].secret.items[0].path "a" is also the path of another file of the projected volume: use another path`,
			`x.projected.sources[3] sets 2 sources: set one per item of sources`}},
		// validateProjectionSources does not count a token's path among the
		// paths that must not repeat.
		{"ProjectedTokenPath", volume, `{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "a"}}, {"secret": {"name": "s", "items": [{"key": "a", "path": "a"}]}}]}}`, nil},
		{"ClusterTrustBundles", volume, `{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "example.com:signer:bundle-1", "path": "a.pem"}}, {"clusterTrustBundle": {"signerName": "example.com/signer", "labelSelector": {"matchLabels": {"a": "b"}}, "path": "b.pem"}},
			{"podCertificate": {"signerName": "example.com/signer", "keyType": "ED25519", "credentialBundlePath": "c.pem", "maxExpirationSeconds": 86400, "userAnnotations": {"example.com/a": "b"}}}]}}`, nil},
		{"ClusterTrustBundlesRefused", volume, `{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "example.com/signer:Bundle", "path": "a.pem"}}, {"clusterTrustBundle": {"signerName": "signer/x", "path": "a.pem"}},
			{"podCertificate": {"signerName": "kubernetes.io/kube-apiserver-client", "keyType": "DSA", "maxExpirationSeconds": 90000, "userAnnotations": {"noprefix": "b"}}}]}}`, []string{
			`x.projected.sources[0].clusterTrustBundle.name "example.com/signer:Bundle" is not a ClusterTrustBundle name: the part before its last ':' (the signer, with ':' for '/') must not contain '/'`,
			`x.projected.sources[1].clusterTrustBundle.signerName "signer/x" is not a signer name: use a signer name such as example.com/signer (a domain with at least one dot, at most 571 characters in all)`,
			`x.projected.sources[1].clusterTrustBundle.path "a.pem" is also the path of another file of the projected volume: use another path`,
			`x.projected.sources[2].podCertificate.userAnnotations[noprefix] Invalid value: "noprefix": must be a domain-prefixed key (such as "acme.io/foo")`,
			`x.projected.sources[2].podCertificate.keyType "DSA" is not supported: use RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 or ED25519`,
			`x.projected.sources[2].podCertificate.maxExpirationSeconds 90000 is invalid: must be from 3600 to 86400 for this signer`,
			`x.projected.sources[2].podCertificate sets no path: set at least one of credentialBundlePath, keyPath and certificateChainPath`}},
		{"EphemeralDataSource", volume, `{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "VolumeSnapshot", "name": "s"}, "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}}}}}`, []string{
			`x.ephemeral.volumeClaimTemplate.spec.dataSource refers to kind "VolumeSnapshot" of the core API group, which must be PersistentVolumeClaim: set apiGroup, e.g. snapshot.storage.k8s.io`,
			`x.ephemeral.volumeClaimTemplate.spec.dataSource must be the same as dataSourceRef: set one of them`}},
		{"EphemeralDataSourceAccepted", volume, `{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "PersistentVolumeClaim", "name": "c"}, "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "c"}}}}}`, nil},
		{"Ephemeral", volume, `{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"name": "x"}, "spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}, "volumeMode": "Raw"}}}}`, []string{
			`x.ephemeral.volumeClaimTemplate.metadata may only set labels and annotations: remove the other fields`,
			`x.ephemeral.volumeClaimTemplate.spec.accessModes may not use ReadWriteOncePod with other access modes: use it alone`,
			`x.ephemeral.volumeClaimTemplate.spec.resources.requests.storage 0 is invalid: must be more than 0`,
			`x.ephemeral.volumeClaimTemplate.spec.volumeMode "Raw" is not supported: use Block or Filesystem`}},
		{"EphemeralAccepted", volume, `{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "10Gi"}}}}}}`, nil},
		{"AzureDiskDefaultKind", volume, `{"name": "v", "azureDisk": {"diskName": "d", "diskURI": "/subscriptions/s/d"}}`, []string{
			`x.azureDisk.diskURI "/subscriptions/s/d" is invalid for a Shared disk: use https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd`}},
		{"ISCSI", volume, `{"name": "a-very-long-volume-name-for-the-iscsi-portal-limit-ab", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.bad", "lun": 256, "chapAuthSession": true, "initiatorName": "eui.0123456789ABCDEF"}}`, []string{
			`x.iscsi.iqn "iqn.bad" is invalid: must be an IQN such as iqn.2001-04.com.example:storage`,
			`x.iscsi.lun 256 is invalid: must be from 0 to 255`,
			`x.iscsi.secretRef is required with CHAP authentication: name the Secret that holds the credentials`,
			`x.iscsi.targetPortal makes <volume name>:<targetPortal> 67 characters, more than 64 with initiatorName set: shorten the volume's name`}},
		{"LegacySources", volume, `{"name": "v", "gcePersistentDisk": {"pdName": "", "partition": 300}}`, []string{
			`x.gcePersistentDisk.pdName is required: set the disk's name`,
			`x.gcePersistentDisk.partition 300 is invalid: must be from 0 to 255`}},
		// ValidatePodSpecificAnnotations, validateSeccompAnnotationsAndFields,
		// validateAppArmorAnnotationsAndFieldsMatchOnCreate
		{"AnnotationsAccepted", annotations, `{"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default", "container.seccomp.security.alpha.kubernetes.io/vllm": "localhost/p.json",
			"container.apparmor.security.beta.kubernetes.io/init": "localhost/p", "controller.kubernetes.io/pod-deletion-cost": "-5", "scheduler.alpha.kubernetes.io/tolerations": "[{\"key\": \"a\", \"operator\": \"Exists\"}]"}},
			"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}, "initContainers": [{"name": "init"}],
			"containers": [{"name": "vllm", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}}]}}`, nil},
		{"AnnotationsRefused", annotations, `{"metadata": {"annotations": {"kubernetes.io/config.mirror": "x", "controller.kubernetes.io/pod-deletion-cost": "+1", "scheduler.alpha.kubernetes.io/tolerations": "[{\"key\": \"a\", \"operator\": \"Foo\"}]",
			"seccomp.security.alpha.kubernetes.io/pod": "unconfined", "container.seccomp.security.alpha.kubernetes.io/vllm": "localhost/../p", "container.apparmor.security.beta.kubernetes.io/router": "strict"}},
			"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": [{"name": "vllm"}]}}`, []string{
			`x[container.apparmor.security.beta.kubernetes.io/router] names container "router", which the pod does not have (its containers: vllm): name one of them`,
			`x[container.apparmor.security.beta.kubernetes.io/router] "strict" is not an AppArmor profile: use runtime/default, unconfined or localhost/<profile>`,
			`x[container.seccomp.security.alpha.kubernetes.io/vllm] "../p" is invalid: must not contain '..'`,
			`x[controller.kubernetes.io/pod-deletion-cost] "+1" is invalid: must be a 32-bit integer without '+' or leading zeros, e.g. 100 or -5`,
			`x[kubernetes.io/config.mirror] marks a static pod a kubelet mirrors, which needs spec.nodeName: remove it`,
			`x[scheduler.alpha.kubernetes.io/tolerations] holds a toleration the API server refuses: [0].operator "Foo" is not supported: use Equal or Exists; use scheduling.tolerations instead`,
			`x[seccomp.security.alpha.kubernetes.io/pod] "unconfined" says another profile than securityContext.seccompProfile: remove the annotation`}},
		{"AnnotationsMismatch", annotations, `{"metadata": {"annotations": {"container.seccomp.security.alpha.kubernetes.io/vllm": "runtime/default", "container.apparmor.security.beta.kubernetes.io/vllm": "localhost/q", "controller.kubernetes.io/pod-deletion-cost": "2147483648", "scheduler.alpha.kubernetes.io/tolerations": "{"}},
			"spec": {"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}, "containers": [{"name": "vllm", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}}`, []string{
			`x[controller.kubernetes.io/pod-deletion-cost] "2147483648" is invalid: must be a 32-bit integer without '+' or leading zeros, e.g. 100 or -5`,
			`x[scheduler.alpha.kubernetes.io/tolerations] is not a JSON list of tolerations: unexpected end of JSON input; use scheduling.tolerations instead`,
			`x[container.seccomp.security.alpha.kubernetes.io/vllm] "runtime/default" says another profile than the container's securityContext.seccompProfile: remove the annotation`,
			`x[container.apparmor.security.beta.kubernetes.io/vllm] "localhost/q" says another profile than the container's appArmorProfile: remove the annotation`}},
		{"SeccompAnnotationValue", annotations, `{"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "default", "container.apparmor.security.beta.kubernetes.io/vllm": ""}}, "spec": {"containers": [{"name": "vllm"}]}}`, []string{
			`x[seccomp.security.alpha.kubernetes.io/pod] "default" is not a seccomp profile: use runtime/default, unconfined or localhost/<path>, or securityContext.seccompProfile`}},
		// ValidateVolumeMounts, validateMountPropagation, validateMountRecursiveReadOnly
		{"MountAccepted", mount, `{"name": "privileged", "mountPath": "/m", "subPath": "a/b", "mountPropagation": "Bidirectional", "readOnly": true, "recursiveReadOnly": "Disabled"}`, nil},
		{"MountReadOnly", mount, `{"name": "v", "mountPath": "/m", "subPathExpr": "$(POD_NAME)", "readOnly": true, "recursiveReadOnly": "Enabled", "mountPropagation": "None"}`, nil},
		{"MountRefused", mount, `{"name": "v", "mountPath": "/m", "subPath": "../a", "subPathExpr": "/b", "mountPropagation": "Bidirectional", "recursiveReadOnly": "IfPossible"}`, []string{
			`x.subPath "../a" is invalid: must not contain '..'`,
			`x.subPathExpr cannot be set with subPath: set one of them`,
			`x.subPathExpr "/b" is invalid: must be a relative path`,
			`x.mountPropagation Bidirectional is only for a privileged container: use HostToContainer or None, or make the container privileged`,
			`x.recursiveReadOnly IfPossible needs readOnly: true: set readOnly, or remove recursiveReadOnly`,
			`x.recursiveReadOnly IfPossible needs mountPropagation None or unset: remove one of them`}},
		{"MountEnums", mount, `{"name": "v", "mountPath": "/m", "mountPropagation": "Shared", "recursiveReadOnly": "Yes"}`, []string{
			`x.mountPropagation "Shared" is not supported: use Bidirectional, HostToContainer or None`,
			`x.recursiveReadOnly "Yes" is not supported: use Disabled, IfPossible or Enabled`}},
		{"FlexVolume", volume, `{"name": "v", "flexVolume": {"driver": "example/flex", "options": {"kubernetes.io/secret": "x", "Foo.K8S.io/a": "y", "ok": "z"}}}`, []string{
			`x.flexVolume.options[Foo.K8S.io/a] is in a namespace Kubernetes reserves (kubernetes.io, k8s.io): use another key`,
			`x.flexVolume.options[kubernetes.io/secret] is in a namespace Kubernetes reserves (kubernetes.io, k8s.io): use another key`}},

		// ValidateIPBlock (pkg/apis/networking/validation), strict CIDRs
		{"IPBlock", ipBlock, `{"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}`, nil},
		{"IPBlockIPv6", ipBlock, `{"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}`, nil},
		{"IPBlockNotCanonical", ipBlock, `{"cidr": "10.0.0.1/8", "except": ["10.1.2.3/16", "010.2.0.0/16", "11.0.0.0/16", "10.0.0.0/8"]}`, []string{
			`x.cidr Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`,
			`x.except[0] Invalid value: "10.1.2.3/16": must not have bits set beyond the prefix length`,
			`x.except[1] Invalid value: "010.2.0.0/16": must not have leading 0s in IP or prefix length`,
			`x.except[2] "11.0.0.0/16" must be a strict subset of cidr 10.0.0.1/8`,
			`x.except[3] "10.0.0.0/8" must be a strict subset of cidr 10.0.0.1/8`}},
		{"IPBlockMapped", ipBlock, `{"cidr": "::ffff:10.0.0.0/104"}`, []string{`x.cidr Invalid value: "::ffff:10.0.0.0/104": must not have an IPv4-mapped IPv6 address`}},
		{"IPBlockEmpty", ipBlock, `{}`, []string{`x.cidr is required`}},

		// validateIngressRules (pkg/apis/networking/validation)
		{"IngressHost", ingressHost, `"*.example.com"`, nil},
		{"IngressHostIP", ingressHost, `"10.0.0.1"`, []string{`x "10.0.0.1" must be a DNS name, not an IP address`}},
		{"IngressHostBadWildcard", ingressHost, `"a.*.com"`, []string{`x "a.*.com": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},

		// ValidateIngressCreate (pkg/apis/networking/validation)
		{"IngressClassSame", ingressClass, `{"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}, "spec": {"ingressClassName": "nginx"}}`, nil},
		{"IngressClassAnnotationAlone", ingressClass, `{"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}}`, nil},
		{"IngressClassDiffers", ingressClass, `{"metadata": {"annotations": {"kubernetes.io/ingress.class": "traefik"}}, "spec": {"ingressClassName": "nginx"}}`,
			[]string{`x[kubernetes.io/ingress.class] "traefik" must match ingressClassName "nginx" when both are specified`}},

		// ValidatePersistentVolumeClaimSpec (pkg/apis/core/validation)
		{"AccessModes", accessModes, `["ReadWriteOnce", "ReadWriteMany"]`, nil},
		{"AccessModesReadWriteOncePodAlone", accessModes, `["ReadWriteOncePod"]`, nil},
		{"AccessModesReadWriteOncePodWithOthers", accessModes, `["ReadWriteOncePod", "ReadOnlyMany", "ReadWriteSome"]`, []string{
			`x[2] "ReadWriteSome" is not supported`,
			`x may not use ReadWriteOncePod with other access modes`}},
		{"AccessModesEmpty", accessModes, `[]`, []string{`x is required`}},

		// validateResourceRequirements, ValidateContainerResourceName,
		// ValidateResourceQuantityValue, validateResourceClaimNames
		{"Resources", resources, `{"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi", "nvidia.com/gpu": "1", "example.com/foo": "2", "hugepages-2Mi": "4Mi", "kubernetes.io/x": "0.5"},
			"limits": {"memory": "2Gi", "nvidia.com/gpu": "1", "example.com/foo": "2", "hugepages-2Mi": "4Mi"}}`, nil},
		{"ResourceNames", resources, `{"limits": {"key": "1", "pods": "1", "a/b/c": "1", "example.com/-x": "1"}}`, []string{
			`x.limits[a/b/c] "a/b/c" is not a valid resource name: a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
			`x.limits[example.com/-x] "example.com/-x" is not a valid resource name: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`x.limits[key] "key" is not a resource a container can request: use cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain such as nvidia.com/gpu`,
			`x.limits[pods] "pods" is not a resource a container can request: use cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain such as nvidia.com/gpu`}},
		{"ResourceQuantities", resources, `{"requests": {"cpu": "2", "memory": "-1", "nvidia.com/gpu": "1500m", "example.com/foo": "1"}, "limits": {"cpu": "1", "nvidia.com/gpu": "2"}}`, []string{
			`x.requests[cpu] 2 is more than its limit 1: Kubernetes requires a limit of at least the request`,
			`x.requests[example.com/foo] 1 needs a limit equal to it: Kubernetes cannot overcommit an extended resource such as a GPU`,
			`x.requests[memory] -1 is invalid: must be 0 or more`,
			`x.requests[nvidia.com/gpu] 1500m is invalid: nvidia.com/gpu takes a whole number`}},
		{"HugePages", resources, `{"requests": {"hugepages-2Mi": "3Mi", "hugepages-1e9": "1Gi"}, "limits": {"hugepages-2Mi": "4Mi"}}`, []string{
			`x.requests[hugepages-1e9] "hugepages-1e9" is not a huge page resource Kubernetes takes here: use hugepages-<page size>, such as hugepages-2Mi or hugepages-1Gi`,
			`x.requests[hugepages-1e9] 1Gi needs a limit equal to it: Kubernetes cannot overcommit huge pages`,
			`x.requests[hugepages-2Mi] 3Mi is invalid: hugepages-2Mi takes a whole number of 2Mi pages`,
			`x requests huge pages without cpu or memory: Kubernetes requires a cpu or memory request or limit beside huge pages`}},
		{"ResourceClaims", resources, `{"claims": [{"name": "gpu"}]}`, []string{
			`x.claims is not supported: it names resource claims of the pod (spec.resourceClaims, dynamic resource allocation), and the stack's pods declare none, so Kubernetes refuses any; remove it`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := c.fn(c.json)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.At("x"))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestIsValidSysctlName(t *testing.T) {
	for name, want := range map[string]bool{
		"net.core.somaxconn": true, "kernel/shm_rmid_forced": true, "net.ipv4.conf.eth0/100.rp_filter": true, "a": true,
		"": false, "Net.core": false, "net..core": false, "net.core.": false, "-net": false, strings.Repeat("a", 254): false,
	} {
		if got := IsValidSysctlName(name); got != want {
			t.Errorf("IsValidSysctlName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got, want := Quote(strings.Repeat("é", 70)), `"`+strings.Repeat("é", 64)+`" (70 characters in all)`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}
