package fuzz_test

import (
	"encoding/json"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/fuzzseeds"
)

// FuzzRunFunction runs the function on a stack (the JSON of an XR, seeded
// with every example and test stack) with one more value set at one field
// (path, any field of the XRD's spec or the XR's metadata; a value that is
// JSON is set as JSON, else as a string), with or without the Input of
// example/composition.yaml. For every input:
//
//   - the function does not panic, returns no error, and answers the same
//     request twice with the same bytes;
//   - every message is bounded (maxMessage);
//   - a Fatal result names the offending field (namesField) and leaves the
//     desired state as it was;
//   - otherwise every composed object, as Crossplane applies it, passes the
//     strict typed decode and the Kubernetes checks of the render tests, on
//     the first reconcile and on the next, which observes what the first
//     composed (the router's RoleBinding then joins);
//   - every value of the spec lands in exactly the option or positional of
//     vLLM's or the router's command line it was meant for (checkArgv);
//   - no composed object holds a credential the spec wrote as a literal,
//     except in the env entry the user wrote, with a warning (checkSecrets).
func FuzzRunFunction(f *testing.F) {
	c := mustLoad(f)
	for _, s := range c.stacks {
		f.Add(s.json, "", "", "", "", []byte(nil))
		f.Add(s.json, "", "", "", "", c.inputJSON)
	}
	seed := c.stacks[0].json // example/claim.yaml sorts first: a namespaced stack
	for _, p := range c.seeds {
		f.Add(seed, p, c.seedValue(p), "", "", []byte(nil))
	}
	for _, v := range fieldSeeds {
		f.Add(seed, v.path, v.value, v.path2, v.value2, []byte(nil))
	}
	blockSeeds, err := fuzzseeds.Seeds(c.paths, c.stackOrNil)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range blockSeeds {
		f.Add(v.Stack, v.Path, v.Value, v.Path2, v.Value2, []byte(nil))
	}
	bounds, err := fuzzseeds.Bounds(c.stackOrNil)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range bounds {
		f.Add(v.Stack, v.Path, v.Value, v.Path2, v.Value2, []byte(nil))
	}
	for _, s := range c.stacks {
		if s.name == "example/stacks/multi-node.yaml" {
			for _, v := range multiNodeSeeds {
				f.Add(s.json, v.path, v.value, v.path2, v.value2, []byte(nil))
			}
		}
	}
	for _, in := range []string{
		`{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "storage": {"size": "100Gi", "storageClassName": "fast"}, "ttl": "30s"}`,
		`{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "engine": {"image": "vllm/vllm-openai:v0.9.2", "imagePullRegistry": "registry.example.com", "version": "0.9.2"}}`,
		`{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "router": {"image": "lmcache/lmstack-router", "tag": "v0.1.9", "version": "0.1.9"}}`,
	} {
		f.Add(seed, "", "", "", "", []byte(in))
	}
	f.Fuzz(func(t *testing.T, xrJSON []byte, path, value, path2, value2 string, inputJSON []byte) {
		var xr map[string]any
		if err := json.Unmarshal(xrJSON, &xr); err != nil || xr == nil {
			return // not an object: nothing Crossplane sends
		}
		if fuzzseeds.Pending(c.stackOrNil, xrJSON, path, value, path2, value2, inputJSON) {
			checkPending(t, xr, path, value)
			return
		}
		if p := c.field(path); p != "" {
			setPath(xr, p, parseValue(value))
		}
		if p := c.field(path2); p != "" {
			setPath(xr, p, parseValue(value2))
		}
		var input map[string]any
		if len(inputJSON) > 0 {
			if err := json.Unmarshal(inputJSON, &input); err != nil || input == nil {
				return
			}
		}
		r, err := request(xr, input, nil, nil)
		if err != nil {
			return
		}
		rsp := runTwice(t, r)
		checkMessages(t, rsp)
		if msg, refused := fatalOf(rsp); refused {
			if !c.namesField(msg) {
				t.Errorf("the Fatal message names no field: %s", msg)
			}
			if n := len(rsp.GetDesired().GetResources()); n > 0 {
				t.Errorf("a Fatal response composed %d resources", n)
			}
			return
		}
		if !metaOf(xr).plausible() {
			return
		}
		checkObjects(t, xr, rsp)
		checkArgv(t, xr, rsp)
		checkSecrets(t, xr, input, nil)
		// The next reconcile observes what this one composed.
		observed := map[string]map[string]any{}
		for k, d := range rsp.GetDesired().GetResources() {
			observed[k] = d.GetResource().AsMap()
		}
		r2, err := request(xr, input, observed, nil)
		if err != nil {
			t.Fatal(err)
		}
		rsp2 := runTwice(t, r2)
		if msg, refused := fatalOf(rsp2); refused {
			t.Fatalf("the first reconcile composed the stack, the second refused it: %s", msg)
		}
		checkObjects(t, xr, rsp2)
		checkSecrets(t, xr, input, observed)
	})
}

// multiNodeSeeds are values at the fields that become a multi-node model's
// LeaderWorkerSet, on example/stacks/multi-node.yaml, at the edges of what
// LWS's webhook takes (the function refuses the others); tools/kubediff
// seeds FuzzComposedObjects with the same.
var multiNodeSeeds = []struct{ path, value, path2, value2 string }{
	{"spec.rollingUpdate", `{"maxUnavailable": 0}`, "", ""},
	{"spec.rollingUpdate", `{"maxUnavailable": "10%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "34%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "10%", "maxSurge": "1%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "33%", "maxSurge": "0%"}`, "spec.replicas", "3"},
	{"spec.replicas", "1073741823", "", ""},
	{"spec.replicas", "1073741824", "", ""},
	{"spec.replicas", "0", "spec.rollingUpdate", `{"maxUnavailable": 0}`},
}

// fieldSeeds are values of the API's Kubernetes types and edge values, as
// starting points for the fuzzer.
var fieldSeeds = []struct{ path, value, path2, value2 string }{
	{"spec.vllmConfig.gpuMemoryUtilization", "NaN", "", ""},
	{"spec.vllmConfig.gpuMemoryUtilization", "0x1p-1", "", ""},
	{"spec.model.chatTemplate", `"{{ messages }}"`, "", ""},
	{"spec.model.name", `"Llama.3/8B-Instruct"`, "spec.model.modelURL", `"org/Mixtral-8x7B-AWQ"`},
	{"metadata.name", `"a-very-long-stack-name-that-is-still-a-dns-subdomain-of-more-than-sixty-three-characters"`, "", ""},
	{"spec.lmcacheConfig", `{"enabled": true, "diskOffloadingBufferSize": "1e300", "cpuOffloadingBufferSize": "4"}`, "spec.storage.enabled", "false"},
	{"spec.env", `[{"name": "HF_TOKEN", "value": "hf_literal_token_value"}]`, "", ""},
	{"spec.routerConfig.env", `[{"name": "VLLM_API_KEY", "value": "sk-literal-api-key"}]`, "spec.routerConfig.routerType", `"kvaware"`},
	{"spec.resources", `{"gpu": "1", "cpu": "1e3", "memory": "0.000001Ki", "memoryLimit": "1Gi"}`, "", ""},
	{"spec.monitoring.serviceMonitor", `{"interval": "99999999999999999999y"}`, "", ""},
	{"spec.monitoring", `{"serviceMonitor": {}, "dashboard": {"labels": {"grafana_dashboard": "1"}}, "alerts": {"for": "1h30m", "waitingRequests": 0, "kvCacheUsagePercent": 100}}`, "spec.vllmConfig.image", `"vllm/vllm-openai:v0.9.1"`},
	{"spec.storage.extraVolumes", `[{"name": "adapters", "emptyDir": {"sizeLimit": "1Gi"}}]`, "spec.storage.extraVolumeMounts", `[{"name": "adapters", "mountPath": "/adapters"}]`},
	{"spec.storage.extraVolumes", `[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}]}}]`, "spec.pod.initContainers", `[{"name": "init", "image": "busybox", "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}]`},
	{"spec.pod.initContainers", `[{"name": "init", "image": "busybox", "ports": [{"name": "http", "containerPort": 8080}], "env": [{"name": "A", "value": "b"}]}]`, "", ""},
	{"spec.env", `[{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]`, "spec.envFrom", `[{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}]`},
	{"spec.routerConfig.resources", `{"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}`, "spec.loraSidecar.resources", `{"requests": {"memory": "1Gi"}}`},
	{"spec.probes.startup", `{"periodSeconds": 2000000000, "failureThreshold": 2}`, "spec.probes.readiness", `{"initialDelaySeconds": 5}`},
	{"spec.routerConfig.routerType", `"kvaware"`, "spec.lmcacheConfig.enabled", "true"},
	{"spec.autoscaling", `{"type": "keda", "maxReplicas": 3, "prometheusAddress": "http://prometheus:9090"}`, "", ""},
	{"spec.model", "null", "spec.models", `[{"name": "a", "modelURL": "org/a"}, {"name": "b", "modelURL": "org/b", "replicas": 2}]`},
	{"spec.routerConfig.httpRoute", `{"parentRefs": [{"name": "gw"}], "hostnames": ["a.example.com"]}`, "spec.routerConfig.ingress", `{"host": "*.example.com", "tlsSecretName": "tls"}`},
	{"spec.networkPolicy", `{"allowFrom": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}`, "", ""},
	{"spec.scheduling", `{"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}`, "", ""},
	// The Kubernetes types the API server checks beyond their schema
	// (internal/kubeapi): values it takes, for the fuzzer to break.
	{"spec.scheduling.tolerations", `[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "a100", "effect": "NoExecute", "tolerationSeconds": 30}, {"operator": "Exists"}]`,
		"spec.routerConfig.scheduling.tolerations", `[{"key": "pool", "value": "cpu", "effect": "PreferNoSchedule"}]`},
	{"spec.scheduling.affinity", `{"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}, {"key": "mem", "operator": "Gt", "values": ["80"]}], "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]}, "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}}`,
		"spec.lmcacheConfig.server.scheduling.affinity", `{"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "serving-engine"}}}]}}`},
	{"spec.routerConfig.scheduling.affinity", `{"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["router"]}]}, "matchLabelKeys": ["pod-template-hash"], "namespaces": ["llm"]}}]}}`, "spec.lmcacheConfig.enabled", "true"},
	{"spec.pod.securityContext", `{"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000, "supplementalGroups": [4000], "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/vllm.json"}, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}], "appArmorProfile": {"type": "RuntimeDefault"}, "windowsOptions": {"runAsUserName": "CORP\\svc"}}`,
		"spec.pod.containerSecurityContext", `{"allowPrivilegeEscalation": false, "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}, "procMount": "Default", "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}}`},
	{"spec.storage.extraVolumes", `[{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420, "items": [{"key": "a", "path": "conf/a.yaml", "mode": 256}]}}, {"name": "tok", "secret": {"secretName": "tok", "items": [{"key": "t", "path": "t"}]}}, {"name": "nfs", "nfs": {"server": "nfs.example.com", "path": "/models"}}, {"name": "host", "hostPath": {"path": "/mnt/models", "type": "Directory"}}]`,
		"spec.pod.initContainers", `[{"name": "init", "image": "busybox", "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}}]`},
	{"spec.pod.annotations", `{"seccomp.security.alpha.kubernetes.io/pod": "runtime/default", "container.apparmor.security.beta.kubernetes.io/vllm": "runtime/default", "controller.kubernetes.io/pod-deletion-cost": "10"}`,
		"spec.routerConfig.podAnnotations", `{"container.seccomp.security.alpha.kubernetes.io/router": "localhost/profiles/router.json"}`},
	{"spec.storage.extraVolumes", `[{"name": "csi", "csi": {"driver": "csi.example.com", "nodePublishSecretRef": {"name": "s"}}}, {"name": "proj", "projected": {"defaultMode": 292, "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}, {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels['app']"}}, {"path": "cpu", "resourceFieldRef": {"containerName": "vllm", "resource": "limits.cpu", "divisor": "1m"}}]}}]}}, {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}}}, {"name": "img", "image": {"reference": "registry.example.com/weights:v1"}}]`, "", ""},
	{"spec.podDisruptionBudget", `{"minAvailable": "50%"}`, "spec.rollingUpdate", `{"maxSurge": "25%", "maxUnavailable": 0}`},
	{"spec.routerConfig.service", `{"type": "NodePort", "nodePort": 30080, "port": 8080, "annotations": {"a/b": "c"}}`, "", ""},
	{"spec.lmcacheConfig.server", `{"replicas": 1, "resources": {"requests": {"cpu": "1"}}}`, "spec.lmcacheConfig.enabled", "true"},
	// Values tools/kubediff found the API server refusing in composed
	// objects; the function refuses them (kubecheck has the rules).
	{"spec.networkPolicy", `{"allowFrom": [{"ipBlock": {"cidr": "10.0.0.1/8", "except": ["10.0.0.1/16"]}}, {"ipBlock": {"cidr": "::ffff:10.0.0.0/104"}}]}`, "", ""},
	{"spec.routerConfig.ingress", `{"className": "nginx", "annotations": {"kubernetes.io/ingress.class": "traefik"}}`, "", ""},
	{"spec.routerConfig.ingress", `{"host": "10.0.0.1"}`, "spec.storage", `{"enabled": true, "size": "1Gi", "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}`},
	{"spec.routerConfig.httpRoute", `{"parentRefs": [{"name": "gw"}, {"name": "gw", "sectionName": "https"}], "hostnames": ["*.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]}`, "", ""},
	// Values that look like options (issue 18): refused where vLLM reads a
	// positional, else passed as --flag=value.
	{"spec.model.path", `"--trust-remote-code"`, "", ""},
	{"spec.model.toolCallParser", `"--trust-remote-code"`, "spec.model.enableTool", "true"},
	{"spec.routerConfig.sessionKey", `"--static-backends"`, "spec.routerConfig.routerType", `"session"`},
	{"spec.model.loraAdapters", `[{"name": "a", "path": "/data/a,b=c"}, {"name": "b", "path": "org/b"}]`, "spec.model.enableLoRA", "true"},
}

// checkPending skips a pending seed of fuzzseeds.Hostile while the
// function fails on it, and fails once the function refuses it.
func checkPending(t *testing.T, xr map[string]any, path, value string) {
	setPath(xr, path, parseValue(value))
	r, err := request(xr, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := function.RunFunction(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	panics.take()
	if msg, refused := fatalOf(rsp); refused && !strings.HasPrefix(msg, internalError) {
		t.Fatalf("the function now refuses %s %s (%s): mark it no longer pending in fuzzseeds.Hostile", path, value, msg)
	}
	t.Skipf("pending (issue 29): the function does not refuse %s %s yet, it panics or composes objects the API server refuses", path, value)
}

// credentials are the variables that hold credentials; the stack takes them
// from Secrets.
var credentials = []string{"HF_TOKEN", "VLLM_API_KEY"}

// withCanaries is a copy of v in which every literal value of a credential
// variable in an env list is a canary, a value found nowhere else; canaries
// counts them.
func withCanaries(v any, canaries *int) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = withCanaries(x, canaries)
		}
		if env, ok := out["env"].([]any); ok {
			for _, e := range env {
				m, _ := e.(map[string]any)
				name, _ := m["name"].(string)
				if _, literal := m["value"].(string); literal && isCredential(name) {
					m["value"] = canary(*canaries)
					*canaries++
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withCanaries(x, canaries)
		}
		return out
	}
	return v
}

func isCredential(name string) bool { return name == credentials[0] || name == credentials[1] }

func canary(i int) string {
	return "canary-" + strings.Repeat("q", 3) + "-" + string(rune('a'+i%26)) + "-zx"
}

const canaryMark = "canary-qqq-"

// checkSecrets renders xr with every literal credential of its env lists
// replaced by a canary, and checks a canary appears in a composed object
// only as the value of the variable the user gave it, and that a warning
// then says so. It reports whether a composed object kept one.
func checkSecrets(t *testing.T, xr map[string]any, input map[string]any, observed map[string]map[string]any) bool {
	t.Helper()
	n := 0
	marked := withCanaries(xr, &n).(map[string]any)
	if n == 0 {
		return false
	}
	r, err := request(marked, input, observed, nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp := runTwice(t, r)
	if _, refused := fatalOf(rsp); refused {
		return false
	}
	kept := false
	for key, d := range rsp.GetDesired().GetResources() {
		obj := d.GetResource().AsMap()
		if dropCredentialEnv(obj) {
			kept = true
		}
		if b, _ := json.Marshal(obj); strings.Contains(string(b), canaryMark) {
			t.Errorf("desired resource %s holds a literal credential of the spec outside the env entry the user wrote it in: %s", key, b)
		}
	}
	for _, r := range rsp.GetResults() {
		if strings.Contains(r.GetMessage(), canaryMark) {
			t.Errorf("a result repeats a literal credential of the spec: %s", r.GetMessage())
		}
	}
	for _, c := range rsp.GetConditions() {
		if strings.Contains(c.GetMessage(), canaryMark) {
			t.Errorf("condition %s repeats a literal credential of the spec: %s", c.GetType(), c.GetMessage())
		}
	}
	if !kept {
		return false
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && strings.Contains(r.GetMessage(), "to a literal value, stored in plain text") {
			return true
		}
	}
	t.Errorf("a composed container has a credential as a literal env value, and no warning says so")
	return true
}

// dropCredentialEnv removes, from every env list below v, the credential
// variables whose value is a canary, and reports whether it removed any.
func dropCredentialEnv(v any) bool {
	dropped := false
	switch v := v.(type) {
	case map[string]any:
		if env, ok := v["env"].([]any); ok {
			var kept []any
			for _, e := range env {
				m, _ := e.(map[string]any)
				name, _ := m["name"].(string)
				value, _ := m["value"].(string)
				if isCredential(name) && strings.HasPrefix(value, canaryMark) {
					dropped = true
					continue
				}
				kept = append(kept, e)
			}
			v["env"] = kept
		}
		for _, x := range v {
			dropped = dropCredentialEnv(x) || dropped
		}
	case []any:
		for _, x := range v {
			dropped = dropCredentialEnv(x) || dropped
		}
	}
	return dropped
}
