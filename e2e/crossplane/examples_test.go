//go:build e2e_crossplane

package crossplane

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// exampleFiles are the stacks users copy: the seed (example/xr.yaml) and
// every example/stacks/*.yaml but legacy-xr.yaml (the XR Crossplane makes
// for example/claim.yaml, which TestClaims applies as a claim),
// observability.yaml, which needs the Prometheus Operator's CRDs: this
// suite starts without them, as testMissingCRD requires, which installs
// them and then runs that example (checkObservabilityExample), and
// picker-scaling.yaml, which needs them too (its pickerRunning signal reads
// the series its ServiceMonitors label), and disaggregated-scaling.yaml (its
// groups' queries too).
func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../example/stacks/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool {
		return filepath.Base(f) == "legacy-xr.yaml" || filepath.Base(f) == "observability.yaml" || filepath.Base(f) == "picker-scaling.yaml" ||
			filepath.Base(f) == "disaggregated-scaling.yaml"
	})
	if len(files) < 5 {
		t.Fatalf("only %d example stacks in example/stacks: %v", len(files), files)
	}
	return append([]string{"../../example/xr.yaml"}, files...)
}

// testExamples: every example stack, in a namespace of its own (ex-<file>)
// with what it references (provide), becomes Ready: its conditions, its
// status.models (replicas and readyReplicas of each model), readyModels,
// router replicas and endpoint agree with the manifest and with its pods,
// every composed object exists, its Deployments are Available and its
// claims Bound, all at once for two TTLs. The seed is also checked for the
// eight objects README lists and for Crossplane calling the function again.
// Together they run 73 GPUs' worth of engines (kvaware.yaml 2x1 + 4,
// production.yaml 2x4, disaggregated.yaml 1 + 2x2, disaggregated-lmcache.yaml
// 1 + 1, multi-node.yaml 2x8, wide-ep.yaml 2x8, inference-extension.yaml 2 + 1,
// disaggregated-inference-extension.yaml 1 + 2, model-cache.yaml 2,
// precise-prefix.yaml 3, ...) on the node's 96. A stack on the inference extension is also checked for its
// pools, pickers and their RBAC (checkExtension).
func testExamples(t *testing.T) {
	for _, f := range exampleFiles(t) {
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			obj := readObject(t, f)
			obj.SetNamespace(namespace(t, "ex-"+base))
			provide(t, obj)
			s := applyStack(t, obj, false)
			s.waitReady(t, s.expect(), 6*time.Minute)
			s.logStatus(t)
			if base == "xr" {
				checkSeedRefs(t, s)
				checkCalledAgain(t, s)
			}
			if base == "multi-node" {
				checkGroup(t, s, "llama3-405b")
			}
			if base == "wide-ep" {
				checkGroup(t, s, "deepseek-r1")
			}
			if base == "inference-extension" {
				checkExtension(t, s)
			}
			if base == adaptersExample {
				checkRuntimeAdapters(t, s)
			}
			if base == "model-cache" {
				checkModelCache(t, s)
			}
		})
	}
}

// provide creates what a stack manifest references, as a platform would
// have it before the stack is applied: the Secrets of hfTokenSecret and
// apiKeySecret (key token unless it says another), the claim of
// storage.existingClaimName (100Gi, ReadWriteMany), and, cluster-wide, the
// StorageClasses (served by the e2e provisioner, binding at once),
// PriorityClasses and RuntimeClasses it names; for a stack on the inference
// extension, the Gateway of its parentRefs, which the Gateway stand-in plays
// for the namespace (accepting the pools its routes reference) until the
// test ends.
func provide(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	ns := obj.GetNamespace()
	if x, ok, _ := unstructured.NestedMap(obj.Object, "spec", "inferenceExtension"); ok && x["enabled"] != false {
		gw.Serve(ns, xp.GatewayAccepts)
		t.Cleanup(func() { gw.Forget(ns) })
	}
	var objs []*unstructured.Unstructured
	walk(obj.Object["spec"], func(key string, v any) {
		name, _ := v.(string)
		switch key {
		case "hfTokenSecret", "apiKeySecret":
			m, _ := v.(map[string]any)
			name, _ = m["name"].(string)
			k, _ := m["key"].(string)
			if k == "" {
				k = "token"
			}
			objs = append(objs, object("v1", "Secret", ns, name, map[string]any{
				"stringData": map[string]any{k: "e2e-not-a-real-" + key},
			}))
		case "existingClaimName":
			objs = append(objs, object("v1", "PersistentVolumeClaim", ns, name, map[string]any{"spec": map[string]any{
				"accessModes": []any{"ReadWriteMany"},
				"resources":   map[string]any{"requests": map[string]any{"storage": "100Gi"}},
			}}))
		case "storageClassName":
			objs = append(objs, object("storage.k8s.io/v1", "StorageClass", "", name, map[string]any{
				"provisioner": xp.ProvisionerName, "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete",
			}))
		case "priorityClassName":
			objs = append(objs, object("scheduling.k8s.io/v1", "PriorityClass", "", name, map[string]any{
				"value": int64(1000000), "description": "e2e: " + name,
			}))
		case "runtimeClassName":
			objs = append(objs, object("node.k8s.io/v1", "RuntimeClass", "", name, map[string]any{"handler": name}))
		}
	})
	for _, o := range objs {
		if o.GetName() != "" {
			apply(t, o)
		}
	}
}

// walk calls f for every key of every map in v, depth first.
func walk(v any, f func(key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			f(k, vv)
			walk(vv, f)
		}
	case []any:
		for _, vv := range x {
			walk(vv, f)
		}
	}
}

// object is an object of the given kind with extra top-level fields.
func object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// checkGroup: a multi-node stack's group runs as LeaderWorkerSet makes it:
// a leader (worker index 0) and a worker pod, both with the variables the
// LWS pod webhook gives every container (the engines' arguments name
// LWS_LEADER_ADDRESS and LWS_WORKER_INDEX, which the kubelet expands), the
// leader at the group's address, and only the leader discovered by the
// router and selected by the engine Service.
// checkModelCache: the model's fill Job ran to completion (the kubelet
// stand-in ends a Job's pod with exit code 0), and the status says the
// cache is filled: status.models[].modelCache Cached, ModelCacheReady True.
func checkModelCache(t *testing.T, s *testStack) {
	t.Helper()
	xr := s.xr(t)
	if got, want := condition(xr, "ModelCacheReady"), (cond{"True", "Cached", "1/1 model caches filled"}); got != want {
		t.Errorf("ModelCacheReady %+v, want %+v", got, want)
	}
	models, _, _ := unstructured.NestedSlice(xr.Object, "status", "models")
	for _, m := range models {
		m, _ := m.(map[string]any)
		if c, _ := m["modelCache"].(map[string]any); c["state"] != "Cached" {
			t.Errorf("status.models[%v].modelCache %v, want state Cached", m["name"], c)
		}
	}
	jobs, err := admin.Dynamic.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).
		Namespace(s.ns()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(jobs.Items); n != 1 {
		t.Fatalf("%d fill Jobs, want 1", n)
	}
	if n, _, _ := unstructured.NestedInt64(jobs.Items[0].Object, "status", "succeeded"); n != 1 {
		t.Errorf("fill Job %s succeeded %d times, want once", jobs.Items[0].GetName(), n)
	}
}

func checkGroup(t *testing.T, s *testStack, model string) {
	t.Helper()
	ctx := context.Background()
	lws := s.name() + "-" + model + "-lws"
	pods, err := admin.Core.Pods(s.ns()).List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + lws})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("the group of %s has %d pods, want a leader and a worker", lws, len(pods.Items))
	}
	discovered := 0
	for _, p := range pods.Items {
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		index := p.Labels["leaderworkerset.sigs.k8s.io/worker-index"]
		want := map[string]string{"LWS_LEADER_ADDRESS": lws + "-0." + lws + "." + s.ns(), "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": index}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("pod %s (worker index %s): env %s=%q, want %q", p.Name, index, k, env[k], v)
			}
		}
		if p.Labels["app.kubernetes.io/component"] == "serving-engine" {
			discovered++
			if index != "0" {
				t.Errorf("pod %s: the router discovers it, and it is worker %s, not the leader", p.Name, index)
			}
		}
	}
	if discovered != 1 {
		t.Errorf("the router discovers %d pods of the group, want its leader", discovered)
	}
}
