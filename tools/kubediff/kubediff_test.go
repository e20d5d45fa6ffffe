// Package kubediff holds internal/kubeapi to the API server it copies: each
// input (a toleration list, an affinity, a security context or a volume, as
// JSON) goes into an otherwise valid pod template, which k8s.io/kubernetes
// v1.37.2 (the version tools/kube builds for the e2e tests) defaults,
// converts and validates as it validates a Deployment's; kubeapi must refuse
// exactly what it refuses.
//
// It also renders stacks through the function and validates every composed
// object as the API server validates its kind (composed_test.go): the
// built-in kinds with k8s.io/kubernetes, HTTPRoute, ScaledObject,
// ServiceMonitor and LeaderWorkerSet with the schema and CEL rules of the
// CRDs e2e/crds pins.
//
// It is its own module so that neither the function nor its tests depend on
// k8s.io/kubernetes: `cd tools/kubediff && go test ./...`, and fuzz with
// `go test -fuzz FuzzAgainstAPIServer` or `-fuzz FuzzComposedObjects`.
package kubediff

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
)

func init() {
	// kube-apiserver --allow-privileged=true, as kubeadm and managed
	// clusters run it: kubeapi leaves privileged to the cluster's policy.
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
}

// kinds are the pieces a stack carries, by the fuzz input's kind byte.
var kinds = []struct {
	name string
	// into puts the JSON into the template; false when it does not decode.
	into func(tmpl *corev1.PodTemplateSpec, j []byte) bool
	// rules are kubeapi's problems with the piece.
	rules func(tmpl *corev1.PodTemplateSpec) []kubeapi.Problem
}{
	{"tolerations",
		func(t *corev1.PodTemplateSpec, j []byte) bool { return json.Unmarshal(j, &t.Spec.Tolerations) == nil },
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem { return kubeapi.Tolerations(t.Spec.Tolerations) }},
	{"affinity",
		func(t *corev1.PodTemplateSpec, j []byte) bool { return json.Unmarshal(j, &t.Spec.Affinity) == nil },
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem { return kubeapi.Affinity(t.Spec.Affinity) }},
	{"podSecurityContext",
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			return json.Unmarshal(j, &t.Spec.SecurityContext) == nil
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			return kubeapi.PodSecurityContext(t.Spec.SecurityContext)
		}},
	{"securityContext",
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			return json.Unmarshal(j, &t.Spec.Containers[0].SecurityContext) == nil
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			return kubeapi.SecurityContext(t.Spec.Containers[0].SecurityContext)
		}},
	{"annotations", // with the pod's and the container's security contexts they must match
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			if json.Unmarshal(j, t) != nil {
				return false
			}
			c := t.Spec.Containers
			return len(c) == 1 && c[0].Name == "vllm" && c[0].Image != "" && len(t.Spec.InitContainers) == 0 && t.Spec.Tolerations == nil && t.Spec.Affinity == nil && t.Spec.Volumes == nil
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			ps := kubeapi.PodAnnotations(t.Annotations, &t.Spec)
			ps = append(ps, kubeapi.PodSecurityContext(t.Spec.SecurityContext)...)
			return append(ps, kubeapi.SecurityContext(t.Spec.Containers[0].SecurityContext)...)
		}},
	{"mount", // of an emptyDir, in the container
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			var m corev1.VolumeMount
			if json.Unmarshal(j, &m) != nil {
				return false
			}
			m.Name, m.MountPath = "v", "/m" // the function checks them against the pod
			t.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{m}
			return true
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			c := t.Spec.Containers[0]
			return kubeapi.VolumeMount(c.VolumeMounts[0], kubeapi.Privileged(c.SecurityContext))
		}},
	{"volume",
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			var v corev1.Volume
			if json.Unmarshal(j, &v) != nil {
				return false
			}
			v.Name = "v" // the name is the function's concern, not kubeapi's
			t.Spec.Volumes = []corev1.Volume{v}
			return true
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			return kubeapi.VolumeSource(t.Spec.Volumes[0].Name, t.Spec.Volumes[0].VolumeSource)
		}},
	{"resources", // of the container; quantities as the function lets them through
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			var raw struct{ Requests, Limits map[string]string }
			if json.Unmarshal(j, &raw) != nil {
				return false
			}
			for _, l := range []map[string]string{raw.Requests, raw.Limits} {
				for _, q := range l {
					if !plainQuantity.MatchString(q) {
						return false
					}
				}
			}
			return json.Unmarshal(j, &t.Spec.Containers[0].Resources) == nil
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			return kubeapi.ContainerResources(t.Spec.Containers[0].Resources)
		}},
	{"hostNamespacesPodSecurityContext", // of a disaggregated model's pod with hostPIDAndIPC
		func(t *corev1.PodTemplateSpec, j []byte) bool {
			t.Spec.HostPID, t.Spec.HostIPC = true, true
			return json.Unmarshal(j, &t.Spec.SecurityContext) == nil
		},
		func(t *corev1.PodTemplateSpec) []kubeapi.Problem {
			return append(kubeapi.PodSecurityContext(t.Spec.SecurityContext), kubeapi.HostIPCSysctls(t.Spec.SecurityContext)...)
		}},
}

// plainQuantity: a quantity without an exponent and of a size the function
// takes (it refuses quantities of 8Ei and more, and huge exponents, before
// kubeapi sees them).
var plainQuantity = regexp.MustCompile(`^[+-]?[0-9]{0,12}(\.[0-9]{1,9})?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)

// template is a valid pod template, as the stack composes one.
func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.9.2"}}},
	}
}

// apiServer validates a template as the API server validates a
// Deployment's: defaulted, converted, ValidatePodTemplateSpec.
func apiServer(t testing.TB, tmpl *corev1.PodTemplateSpec) field.ErrorList {
	pt := &corev1.PodTemplate{Template: *tmpl.DeepCopy()}
	legacyscheme.Scheme.Default(pt)
	var internal core.PodTemplate
	if err := legacyscheme.Scheme.Convert(pt, &internal, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	opts := podutil.GetValidationOptionsFromPodTemplate(&internal.Template, nil)
	return validation.ValidatePodTemplateSpec(&internal.Template, field.NewPath("template"), opts)
}

// diverges says how kubeapi and the API server disagree on a piece, or "".
func diverges(t testing.TB, kind int, j []byte) string {
	k := kinds[kind%len(kinds)]
	tmpl := template()
	if !k.into(tmpl, j) {
		return ""
	}
	errs := apiServer(t, tmpl)
	var problems []string
	for _, p := range k.rules(tmpl) {
		// Documented difference: a key in matchLabelKeys and in the
		// selector passes the template but fails each pod it makes.
		if !strings.Contains(p.Msg, "is also a key of labelSelector") {
			problems = append(problems, p.At(k.name))
		}
	}
	if (len(errs) > 0) != (len(problems) > 0) {
		return fmt.Sprintf("%s %s: the API server says %v; kubeapi says %q", k.name, j, errs, problems)
	}
	return ""
}

func TestTemplateIsValid(t *testing.T) {
	if errs := apiServer(t, template()); len(errs) > 0 {
		t.Fatalf("the base template is refused: %v", errs)
	}
}

// seeds are pieces each kind takes and refuses.
var seeds = []struct {
	kind int
	json string
}{
	{0, `[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"}]`},
	{0, `[{"key": "k", "operator": "Foo"}]`},
	{0, `[{"key": "k", "operator": "Lt", "value": "5"}]`},
	{0, `[{"key": "k", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5}]`},
	{0, `[{"value": "v"}, {"key": "k", "operator": "Exists", "value": "x", "effect": "Sometimes"}]`},
	{1, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}], "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}, "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "In", "values": ["bad value"]}]}}]}}`},
	{1, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In"}]}]}}}`},
	{1, `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}`},
	{1, `{"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}`},
	{1, `{"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "", "labelSelector": {"matchLabels": {"a": "b"}}, "matchLabelKeys": ["c"], "mismatchLabelKeys": ["c"], "namespaces": ["ns"]}]}}`},
	{2, `{"runAsUser": 1000, "fsGroup": 1, "sysctls": [{"name": "net.core.somaxconn", "value": "1"}], "seccompProfile": {"type": "Localhost", "localhostProfile": "a.json"}, "seLinuxChangePolicy": "MountOption", "supplementalGroupsPolicy": "Strict"}`},
	{2, `{"runAsUser": -1, "sysctls": [{"name": "Net", "value": "1"}], "seccompProfile": {"type": "Localhost"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": " a"}}`},
	{2, `{"windowsOptions": {"hostProcess": true, "runAsUserName": "a\\b", "gmsaCredentialSpecName": "x"}}`},
	{3, `{"allowPrivilegeEscalation": false, "capabilities": {"add": ["SYS_ADMIN"]}, "privileged": false, "procMount": "Default"}`},
	{3, `{"allowPrivilegeEscalation": false, "privileged": true, "procMount": "Unmasked", "capabilities": {"add": ["CAP_SYS_ADMIN"]}}`},
	{4, `{"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default", "container.apparmor.security.beta.kubernetes.io/vllm": "localhost/p", "controller.kubernetes.io/pod-deletion-cost": "-5"}}, "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}}`},
	{4, `{"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined", "container.seccomp.security.alpha.kubernetes.io/vllm": "localhost/a", "scheduler.alpha.kubernetes.io/tolerations": "[{\"operator\": \"Exists\"}]"}}, "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": [{"name": "vllm", "image": "i", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "b"}}}]}}`},
	{4, `{"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/router": "x", "kubernetes.io/config.mirror": "m", "controller.kubernetes.io/pod-deletion-cost": "08"}}}`},
	{5, `{"subPath": "a/b", "readOnly": true, "recursiveReadOnly": "IfPossible", "mountPropagation": "HostToContainer"}`},
	{5, `{"subPathExpr": "$(POD_NAME)/x", "mountPropagation": "Bidirectional", "recursiveReadOnly": "Enabled"}`},
	{5, `{"subPath": "/a", "recursiveReadOnly": "Disabled"}`},
	{6, `{"configMap": {"name": "c", "defaultMode": 420, "items": [{"key": "a", "path": "a/b..c", "mode": 511}]}}`},
	{6, `{"configMap": {"name": "", "items": [{"key": "", "path": "../a"}]}}`},
	{6, `{"secret": {"secretName": "s", "defaultMode": 512}}`},
	{6, `{"hostPath": {"path": "/a/../b", "type": "Dir"}}`},
	{6, `{"nfs": {"server": "s", "path": "rel"}}`},
	{6, `{"csi": {"driver": "CSI.example.com", "nodePublishSecretRef": {"name": "s"}}}`},
	{6, `{"projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {"downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels['a']"}}, {"path": "c", "resourceFieldRef": {"containerName": "vllm", "resource": "limits.memory", "divisor": "1Mi"}}]}}]}}`},
	{6, `{"projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 599}}, {"configMap": {"name": "c", "items": [{"key": "a", "path": "x"}]}, "secret": {"name": "s", "items": [{"key": "a", "path": "x"}]}}]}}`},
	{6, `{"downwardAPI": {"items": [{"path": "c", "resourceFieldRef": {"containerName": "vllm", "resource": "limits.cpu", "divisor": "1000m"}}, {"path": "m", "resourceFieldRef": {"containerName": "vllm", "resource": "limits.memory", "divisor": "1024"}}]}}`},
	{6, `{"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}`},
	{6, `{"ephemeral": {"volumeClaimTemplate": {"metadata": {"name": "x"}, "spec": {"accessModes": [], "resources": {}}}}}`},
	{6, `{"image": {"reference": "r"}}`},
	{6, `{"projected": {"sources": [{"clusterTrustBundle": {"name": "example.com:signer:b", "path": "a"}}, {"clusterTrustBundle": {"signerName": "example.com/s", "labelSelector": {}, "path": "b"}}, {"podCertificate": {"signerName": "example.com/s", "keyType": "RSA3072", "keyPath": "k", "maxExpirationSeconds": 3600, "userAnnotations": {"example.com/a": "b"}}}]}}`},
	{6, `{"projected": {"sources": [{"clusterTrustBundle": {"name": "a/b:c", "path": "a"}}, {"podCertificate": {"signerName": "kubernetes.io/x", "keyType": "RSA", "maxExpirationSeconds": 90000}}]}}`},
	{6, `{"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "dataSource": {"kind": "VolumeSnapshot", "name": "s", "apiGroup": "snapshot.storage.k8s.io"}, "dataSourceRef": {"kind": "VolumeSnapshot", "name": "s", "apiGroup": "snapshot.storage.k8s.io"}}}}}`},
	{6, `{"azureDisk": {"diskName": "d", "diskURI": "https://a.blob.core.windows.net/c/d.vhd"}}`},
	{6, `{"iscsi": {"targetPortal": "1.2.3.4:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0}}`},
	{6, `{"emptyDir": {"sizeLimit": "-1"}}`},
	{6, `{}`},
	{7, `{"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"}, "limits": {"nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi", "kubernetes.io/x": "0.5"}}`},
	{7, `{"requests": {"key": "1"}}`},
	{7, `{"limits": {"example.com/-x": "1", "a/b/c": "1"}}`},
	{7, `{"requests": {"cpu": "2", "memory": "-1", "nvidia.com/gpu": "1500m"}, "limits": {"cpu": "1", "nvidia.com/gpu": "2"}}`},
	{7, `{"requests": {"hugepages-2Mi": "3Mi"}, "limits": {"hugepages-2Mi": "3Mi"}}`},
	{7, `{"requests": {"hugepages-1Gi": "1Gi"}}`},
	{7, `{"limits": {"hugepages-2Mi": "2Mi"}}`},
	{7, `{"claims": [{"name": "a"}]}`},
	{7, `{"requests": {"pods": "1", "requests.cpu": "1"}}`},
	{7, `{"requests": {"example.com/foo": "0.5"}, "limits": {"example.com/foo": "0.5"}}`},
	{8, `{"runAsUser": 1000, "sysctls": [{"name": "net.core.somaxconn", "value": "1"}, {"name": "kernel.shm_next_id", "value": "1"}, {"name": "fs.mqueue", "value": "1"}]}`},
	{8, `{"sysctls": [{"name": "kernel/shm_rmid_forced", "value": "1"}]}`},
	{8, `{"sysctls": [{"name": "fs.mqueue.msg_max", "value": "10"}]}`},
	{8, `{"sysctls": [{"name": "kernel.msgmnb", "value": "10"}]}`},
}

func TestAgainstAPIServer(t *testing.T) {
	for _, s := range seeds {
		if d := diverges(t, s.kind, []byte(s.json)); d != "" {
			t.Error(d)
		}
	}
}

// FuzzAgainstAPIServer starts from a seed of a kind and sets up to two of
// its fields (any field some seed of the kind has, picked by hash when the
// fuzzed path is none) to fuzzed values (JSON, or else a string), so the
// pieces stay shaped like what users write.
func FuzzAgainstAPIServer(f *testing.F) {
	for i := range seeds {
		f.Add(uint8(i), "", "", "", "")
	}
	for _, v := range []struct{ path, value string }{
		{"[0].operator", `"Exists"`}, {"[0].effect", `"NoExecute"`}, {"[0].tolerationSeconds", "0"}, {"runAsUser", "-1"},
		{"seccompProfile.localhostProfile", `"../x"`}, {"configMap.items[0].path", `"..a"`}, {"hostPath.path", `""`}, {"sysctls[0].name", `"a/b.c"`},
	} {
		for i := range seeds {
			f.Add(uint8(i), v.path, v.value, "", "")
		}
	}
	f.Fuzz(func(t *testing.T, seed uint8, path, value, path2, value2 string) {
		s := seeds[int(seed)%len(seeds)]
		var v any
		if err := json.Unmarshal([]byte(s.json), &v); err != nil {
			t.Fatal(err)
		}
		for _, pv := range [][2]string{{path, value}, {path2, value2}} {
			if pv[0] == "" {
				continue
			}
			v = set(v, fieldOf(s.kind, pv[0]), parse(pv[1]))
		}
		j, _ := json.Marshal(v)
		if d := diverges(t, s.kind, j); d != "" {
			t.Error(d)
		}
	})
}

// fieldPaths are the paths of every field the seeds of each kind set.
var fieldPaths = func() map[int][]string {
	m := map[int][]string{}
	for _, s := range seeds {
		var v any
		if err := json.Unmarshal([]byte(s.json), &v); err != nil {
			panic(err)
		}
		walk(v, "", func(p string) {
			if !slices.Contains(m[s.kind], p) {
				m[s.kind] = append(m[s.kind], p)
			}
		})
	}
	for k := range m {
		slices.Sort(m[k])
	}
	return m
}()

func walk(v any, at string, visit func(string)) {
	if at != "" {
		visit(at)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			walk(x, strings.TrimPrefix(at+"."+k, "."), visit)
		}
	case []any:
		for i, x := range v {
			walk(x, fmt.Sprintf("%s[%d]", at, i), visit)
		}
	}
}

// fieldOf is the fuzzed path when a seed of the kind has it, else one of
// theirs by the path's hash.
func fieldOf(kind int, p string) string {
	ps := fieldPaths[kind]
	if slices.Contains(ps, p) {
		return p
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	return ps[int(h.Sum32()%uint32(len(ps)))]
}

func parse(s string) any {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}

var step = regexp.MustCompile(`^([^.\[]*)(?:\[(\d+)\])?\.?`)

// set sets x at a path such as a.b[0].c below v, creating maps (not list
// items) on the way; it gives up on paths through values of another type.
func set(v any, path string, x any) any {
	if path == "" {
		return x
	}
	m := step.FindStringSubmatch(path)
	rest := path[len(m[0]):]
	if m[1] != "" {
		obj, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				return v
			}
			obj = map[string]any{}
		}
		if m[2] == "" {
			obj[m[1]] = set(obj[m[1]], rest, x)
			return obj
		}
		obj[m[1]] = set(obj[m[1]], "["+m[2]+"]"+prefixDot(rest), x)
		return obj
	}
	list, ok := v.([]any)
	i, _ := strconv.Atoi(m[2])
	if !ok || i >= len(list) {
		return v
	}
	list[i] = set(list[i], rest, x)
	return list
}

func prefixDot(rest string) string {
	if rest == "" || strings.HasPrefix(rest, "[") {
		return rest
	}
	return "." + rest
}
