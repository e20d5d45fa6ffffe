package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestXRCRD checks the CRDs Crossplane generates from xrd/definition.yaml
// and xrd/legacy/definition.yaml as the API server serves them.
func TestXRCRD(t *testing.T) {
	cases := map[string]struct {
		scope   extv1.ResourceScope
		fields  [][]string // Crossplane's and ours
		columns []string
	}{
		"productionstacks.serving.vllm.ai": {
			scope:   extv1.NamespaceScoped,
			fields:  [][]string{{"spec", "crossplane", "compositionRef"}, {"spec", "crossplane", "resourceRefs"}, {"spec", "model"}, {"spec", "models"}, {"status", "conditions"}, {"status", "models"}, {"status", "endpoint"}},
			columns: []string{"MODELS", "ENDPOINT", "ROUTING", "SYNCED", "READY", "COMPOSITION", "COMPOSITIONREVISION", "AGE"},
		},
		"xproductionstacks.serving.vllm.ai": {
			scope:   extv1.ClusterScoped,
			fields:  [][]string{{"spec", "compositionRef"}, {"spec", "claimRef"}, {"spec", "resourceRefs"}, {"spec", "model"}, {"spec", "models"}, {"status", "conditions"}, {"status", "claimConditionTypes"}, {"status", "models"}},
			columns: []string{"MODELS", "ENDPOINT", "ROUTING", "SYNCED", "READY", "COMPOSITION", "COMPOSITIONREVISION", "AGE"},
		},
	}
	admin, _ := client(t, cp.Config())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := admin.Resource(extv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			crd := &extv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				t.Fatal(err)
			}
			if crd.Spec.Scope != tc.scope {
				t.Errorf("scope %s, want %s", crd.Spec.Scope, tc.scope)
			}
			if got, want := crd.Spec.Names.Categories, []string{"crossplane", "vllm", "composite"}; !slices.Equal(got, want) {
				t.Errorf("categories %v, want %v", got, want)
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
				t.Fatalf("versions %+v, want v1alpha1 served and stored", crd.Spec.Versions)
			}
			v := crd.Spec.Versions[0]
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("no status subresource")
			}
			for _, p := range tc.fields {
				s := *v.Schema.OpenAPIV3Schema
				for _, f := range p {
					next, ok := s.Properties[f]
					if !ok {
						t.Errorf("schema has no %s", strings.Join(p, "."))
						break
					}
					s = next
				}
			}
			var cols []string
			for _, c := range v.AdditionalPrinterColumns {
				cols = append(cols, c.Name)
			}
			if !slices.Equal(cols, tc.columns) {
				t.Errorf("printer columns %v, want %v", cols, tc.columns)
			}
		})
	}
}

// TestXRDefaults creates manifests through the CRD and checks that the API
// server stores them as written plus the XRD's schema defaults
// (v1alpha1.TopLevelDefaults entries InSchema, each applied only when its
// parent object is present) — nothing pruned, nothing else added.
func TestXRDefaults(t *testing.T) {
	ns := namespace(t, "crd-defaults")
	seed := readYAML(t, "../example/xr.yaml")
	cases := map[string]map[string]any{
		"seed": seed,
		"minimal": {
			"apiVersion": "serving.vllm.ai/v1alpha1",
			"kind":       "ProductionStack",
			"metadata":   map[string]any{"name": "minimal"},
			"spec": map[string]any{"model": map[string]any{
				"name": "Llama-3.2-1B-Instruct", "modelURL": "meta-llama/Llama-3.2-1B-Instruct",
			}},
		},
		"every-defaulted-parent": {
			"apiVersion": "serving.vllm.ai/v1alpha1",
			"kind":       "ProductionStack",
			"metadata":   map[string]any{"name": "parents"},
			"spec": map[string]any{
				"model":        map[string]any{"name": "m", "modelURL": "org/m"},
				"vllmConfig":   map[string]any{"hfTokenSecret": map[string]any{"name": "hf"}},
				"routerConfig": map[string]any{},
				"resources":    map[string]any{},
				"storage":      map[string]any{},
			},
		},
	}
	admin, warned := client(t, cp.Config())
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			xr := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}
			xr.SetNamespace(ns)
			got, err := admin.Resource(xrGVR).Namespace(ns).Create(ctx, xr, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
			if err != nil {
				t.Fatalf("the API server rejects %s: %v", name, err)
			}
			noWarnings(t, warned, "creating "+name)
			spec := m["spec"].(map[string]any)
			want, applied := withSchemaDefaults(t, spec)
			if diff := cmp.Diff(normalize(t, want), normalize(t, got.Object["spec"])); diff != "" {
				t.Errorf("stored spec differs from the manifest plus schema defaults %v (-want +got):\n%s", applied, diff)
			}
			if name == "minimal" || name == "every-defaulted-parent" {
				// These set none of the defaulted fields, so every default
				// whose parent is present must have been applied.
				var want []string
				for _, d := range v1alpha1.TopLevelDefaults {
					if d.InSchema() && (name == "every-defaulted-parent" || strings.Count(d.Path, ".") == 1) {
						want = append(want, d.Path)
					}
				}
				if !slices.Equal(applied, want) {
					t.Errorf("defaults applied: %v, want %v", applied, want)
				}
			}
			t.Logf("defaults filled in by the API server: %v", applied)
		})
	}
}

// withSchemaDefaults returns spec with the XRD's schema defaults applied the
// way the API server applies them, and the paths it defaulted.
func withSchemaDefaults(t *testing.T, spec map[string]any) (map[string]any, []string) {
	t.Helper()
	out := runtime.DeepCopyJSON(normalize(t, spec).(map[string]any))
	var applied []string
	for _, d := range v1alpha1.TopLevelDefaults {
		if !d.InSchema() {
			continue
		}
		path := strings.Split(strings.TrimPrefix(d.Path, "spec."), ".")
		if parent := path[:len(path)-1]; len(parent) > 0 {
			if _, found, _ := unstructured.NestedMap(out, parent...); !found {
				continue // the API server defaults a field only inside a present object
			}
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(out, path...); found {
			continue
		}
		if err := unstructured.SetNestedField(out, normalize(t, d.Value), path...); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, d.Path)
	}
	return out, applied
}

// TestExamplesAccepted: every example manifest a user applies to a cluster
// with the namespaced XRD is accepted as is (strict field validation, no
// warnings). example/claim.yaml is the same manifest as a claim of the
// legacy XRD, which is why it must pass the namespaced XR's CRD too.
func TestExamplesAccepted(t *testing.T) {
	ns := namespace(t, "crd-examples")
	admin, warned := client(t, cp.Config())
	for _, f := range []string{"example/xr.yaml", "example/claim.yaml", "example/stacks/multi-model.yaml", "example/stacks/lmcache.yaml", "example/stacks/session.yaml", "example/stacks/production.yaml", "example/stacks/kvaware.yaml", "example/stacks/disaggregated.yaml", "example/stacks/disaggregated-lmcache.yaml", "example/stacks/multi-node.yaml", "example/stacks/wide-ep.yaml", "example/stacks/inference-extension.yaml", "example/stacks/disaggregated-inference-extension.yaml", "example/stacks/picker-scaling.yaml", "example/stacks/disaggregated-scaling.yaml", "example/stacks/precise-prefix.yaml", "example/stacks/canary.yaml", "example/stacks/model-cache.yaml"} {
		t.Run(f, func(t *testing.T) {
			xr := &unstructured.Unstructured{Object: readYAML(t, "../"+f)}
			xr.SetNamespace(ns)
			if _, err := admin.Resource(xrGVR).Namespace(ns).Create(context.Background(), xr, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			}); err != nil {
				t.Errorf("rejected: %v", err)
			}
			noWarnings(t, warned, f)
		})
	}
}

// TestXRRejects: bad manifests are rejected by the API server with the
// message a user sees (kubectl prints it after "Error from server").
func TestXRRejects(t *testing.T) {
	ns := namespace(t, "crd-rejects")
	admin, _ := client(t, cp.Config())
	const prefix = `ProductionStack.serving.vllm.ai "test-stack" is invalid: `
	// With an error of the OpenAPI schema the API server skips the CEL rules
	// (x-kubernetes-validations) and says so after the errors.
	const notChecked = `, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`
	set := func(path string, v any) func(map[string]any) {
		return func(xr map[string]any) {
			if err := unstructured.SetNestedField(xr, v, strings.Split(path, ".")...); err != nil {
				t.Fatal(err)
			}
		}
	}
	del := func(path string) func(map[string]any) {
		return func(xr map[string]any) { unstructured.RemoveNestedField(xr, strings.Split(path, ".")...) }
	}
	models := func(items ...map[string]any) func(map[string]any) {
		return func(xr map[string]any) {
			unstructured.RemoveNestedField(xr, "spec", "model")
			var l []any
			for _, i := range items {
				l = append(l, i)
			}
			xr["spec"].(map[string]any)["models"] = l
		}
	}
	cases := []struct {
		name   string
		mutate []func(map[string]any)
		want   string
	}{
		{
			name:   "deploymentStrategy not in the enum",
			mutate: []func(map[string]any){set("spec.deploymentStrategy", "BlueGreen")},
			want:   prefix + `[spec.deploymentStrategy: Unsupported value: "BlueGreen": supported values: "RollingUpdate", "Recreate"` + notChecked,
		},
		{
			name:   "gpuMemoryUtilization above 1",
			mutate: []func(map[string]any){set("spec.vllmConfig.gpuMemoryUtilization", "1.5")},
			want:   prefix + `spec.vllmConfig.gpuMemoryUtilization: Invalid value: "1.5": gpuMemoryUtilization must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		{
			name:   "gpuMemoryUtilization not a number",
			mutate: []func(map[string]any){set("spec.vllmConfig.gpuMemoryUtilization", "90%")},
			want:   prefix + `spec.vllmConfig.gpuMemoryUtilization: Invalid value: "90%": spec.vllmConfig.gpuMemoryUtilization in body should match '^([01](\.[0-9]+)?|\.[0-9]+)?$'`,
		},
		{
			name:   "negative replicas",
			mutate: []func(map[string]any){set("spec.replicas", int64(-1))},
			want:   prefix + `spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		},
		{
			name:   "both model and models",
			mutate: []func(map[string]any){set("spec.models", []any{map[string]any{"name": "other", "modelURL": "org/other"}})},
			want:   prefix + `spec: Invalid value: set either spec.model or spec.models, not both`,
		},
		{
			name:   "neither model nor models",
			mutate: []func(map[string]any){del("spec.model")},
			want:   prefix + `spec: Invalid value: set spec.model (one model) or spec.models (several models)`,
		},
		{
			name:   "enableTool without toolCallParser",
			mutate: []func(map[string]any){set("spec.model.enableTool", true)},
			want:   prefix + `spec.model: Invalid value: enableTool requires toolCallParser (for example hermes, llama3_json or mistral): vLLM refuses to start without it`,
		},
		{
			name:   "unknown field",
			mutate: []func(map[string]any){set("spec.model.quantization", "awq")},
			want:   `ProductionStack in version "v1alpha1" cannot be handled as a ProductionStack: strict decoding error: unknown field "spec.model.quantization"`,
		},
		{
			name:   "modelURL and path both missing",
			mutate: []func(map[string]any){del("spec.model.modelURL")},
			want:   prefix + `spec.model: Invalid value: set modelURL (a Hugging Face model ID or URL) or path (a local path to the model files)`,
		},
		{
			name: "duplicate model names in models",
			mutate: []func(map[string]any){models(
				map[string]any{"name": "llama", "modelURL": "org/a"},
				map[string]any{"name": "llama", "modelURL": "org/b"},
			)},
			want: prefix + `spec.models[1]: Duplicate value: {"name":"llama"}`,
		},
		{
			name: "duplicate inferenceObjectives names",
			mutate: []func(map[string]any){set("spec.model.inferenceObjectives", []any{
				map[string]any{"name": "batch", "priority": int64(-1)}, map[string]any{"name": "batch", "priority": int64(1)},
			})},
			want: prefix + `spec.model.inferenceObjectives[1]: Duplicate value: {"name":"batch"}`,
		},
		{
			name:   "inferenceObjectives priority beyond an int32",
			mutate: []func(map[string]any){set("spec.model.inferenceObjectives", []any{map[string]any{"name": "batch", "priority": int64(1) << 31}})},
			want:   prefix + `spec.model.inferenceObjectives[0].priority: Invalid value: 2147483648: spec.model.inferenceObjectives[0].priority in body should be less than or equal to 2147483647`,
		},
		{
			name:   "existingClaimName with size",
			mutate: []func(map[string]any){set("spec.storage", map[string]any{"existingClaimName": "models", "size": "100Gi"})},
			want:   prefix + `spec.storage: Invalid value: existingClaimName mounts a claim the stack does not own: leave out size, storageClassName and accessModes`,
		},
		{
			name:   "sessionKey not an HTTP header name",
			mutate: []func(map[string]any){set("spec.routerConfig.routerType", "session"), set("spec.routerConfig.sessionKey", "user id")},
			want:   prefix + `spec.routerConfig.sessionKey: Invalid value: "user id": spec.routerConfig.sessionKey in body should match '^[A-Za-z0-9!#$%&'*+.^_|~-]*$'`,
		},
		{
			name:   "kvaware with two routers",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"routerType": "kvaware", "replicas": int64(2)})},
			want:   prefix + `spec.routerConfig: Invalid value: routerType kvaware runs the LMCache controller inside the router, and each engine registers with one router pod: keep one router replica and no router autoscaling`,
		},
		{
			name:   "kvaware with router autoscaling",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"routerType": "kvaware", "autoscaling": map[string]any{"maxReplicas": int64(3)}})},
			want:   prefix + `spec.routerConfig: Invalid value: routerType kvaware runs the LMCache controller inside the router, and each engine registers with one router pod: keep one router replica and no router autoscaling`,
		},
		{
			name:   "prefixMinMatchLength without prefixaware",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"prefixMinMatchLength": int64(64)})},
			want:   prefix + `spec.routerConfig: Invalid value: prefixMinMatchLength applies to routerType prefixaware only`,
		},
		{
			name:   "lmcacheControllerPort without kvaware",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"routerType": "session", "lmcacheControllerPort": int64(9000)})},
			want:   prefix + `spec.routerConfig: Invalid value: lmcacheControllerPort, lmcacheControllerReplyPort, lmcacheControllerHeartbeatPort and kvAwareThreshold apply to routerType kvaware only`,
		},
		{
			name:   "lmcacheControllerReplyPort without kvaware",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"lmcacheControllerReplyPort": int64(9001)})},
			want:   prefix + `spec.routerConfig: Invalid value: lmcacheControllerPort, lmcacheControllerReplyPort, lmcacheControllerHeartbeatPort and kvAwareThreshold apply to routerType kvaware only`,
		},
		{
			name:   "engineVersion that is not a release",
			mutate: []func(map[string]any){set("spec.vllmConfig.engineVersion", "latest")},
			want:   prefix + `spec.vllmConfig.engineVersion: Invalid value: "latest": spec.vllmConfig.engineVersion in body should match '^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$'`,
		},
		{
			name:   "drainSeconds above an hour",
			mutate: []func(map[string]any){set("spec.shutdown", map[string]any{"drainSeconds": int64(3601)})},
			want:   prefix + `spec.shutdown.drainSeconds: Invalid value: 3601: spec.shutdown.drainSeconds in body should be less than or equal to 3600`,
		},
		{
			name:   "negative routingDelaySeconds",
			mutate: []func(map[string]any){set("spec.shutdown", map[string]any{"routingDelaySeconds": int64(-1)})},
			want:   prefix + `spec.shutdown.routingDelaySeconds: Invalid value: -1: spec.shutdown.routingDelaySeconds in body should be greater than or equal to 0`,
		},
		{
			name:   "workerHeartbeatTime of the worker timeout",
			mutate: []func(map[string]any){set("spec.lmcacheConfig.workerHeartbeatTime", int64(30))},
			want:   prefix + `spec.lmcacheConfig.workerHeartbeatTime: Invalid value: 30: spec.lmcacheConfig.workerHeartbeatTime in body should be less than or equal to 29`,
		},
		{
			name:   "nodePort with a ClusterIP Service",
			mutate: []func(map[string]any){set("spec.routerConfig", map[string]any{"service": map[string]any{"nodePort": int64(30080)}})},
			want:   prefix + `spec.routerConfig.service: Invalid value: nodePort needs type NodePort or LoadBalancer`,
		},
		{
			name:   "routerType not in the enum",
			mutate: []func(map[string]any){set("spec.routerConfig.routerType", "random")},
			want:   prefix + `[spec.routerConfig.routerType: Unsupported value: "random": supported values: "roundrobin", "session", "prefixaware", "kvaware"` + notChecked,
		},
		{
			name:   "dtype not in the enum",
			mutate: []func(map[string]any){set("spec.model.dtype", "int8")},
			want:   prefix + `[spec.model.dtype: Unsupported value: "int8": supported values: "", "auto", "half", "float16", "bfloat16", "float", "float32"` + notChecked,
		},
		{
			name:   "gpu not a whole number",
			mutate: []func(map[string]any){set("spec.resources.gpu", "two")},
			want:   prefix + `spec.resources.gpu: Invalid value: "two": spec.resources.gpu in body should match '^[0-9]*$'`,
		},
		{
			name:   "tensorParallelSize 0",
			mutate: []func(map[string]any){set("spec.vllmConfig.tensorParallelSize", int64(0))},
			want:   prefix + `spec.vllmConfig.tensorParallelSize: Invalid value: 0: spec.vllmConfig.tensorParallelSize in body should be greater than or equal to 1`,
		},
		{
			name: "enableTool without toolCallParser in models[1]",
			mutate: []func(map[string]any){models(
				map[string]any{"name": "a", "modelURL": "org/a"},
				map[string]any{"name": "b", "modelURL": "org/b", "enableTool": true},
			)},
			want: prefix + `spec.models[1]: Invalid value: enableTool requires toolCallParser (for example hermes, llama3_json or mistral): vLLM refuses to start without it`,
		},
		{
			name:   "hfTokenSecret without name",
			mutate: []func(map[string]any){set("spec.vllmConfig.hfTokenSecret", map[string]any{"key": "token"})},
			want:   prefix + `[spec.vllmConfig.hfTokenSecret.name: Required value` + notChecked,
		},
		{
			name:   "remoteSerde not in the enum",
			mutate: []func(map[string]any){set("spec.lmcacheConfig.remoteSerde", "json")},
			want:   prefix + `[spec.lmcacheConfig.remoteSerde: Unsupported value: "json": supported values: "", "naive", "cachegen"` + notChecked,
		},
		{
			name:   "name longer than a label value",
			mutate: []func(map[string]any){set("metadata.name", strings.Repeat("s", 64))},
			want:   `ProductionStack.serving.vllm.ai "` + strings.Repeat("s", 64) + `" is invalid: [metadata.name: Too long: may not be more than 63 bytes` + notChecked,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			xr := readYAML(t, "../example/xr.yaml")
			xr["metadata"].(map[string]any)["namespace"] = ns
			for _, m := range tc.mutate {
				m(xr)
			}
			_, err := admin.Resource(xrGVR).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: xr}, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			if err == nil {
				b, _ := json.Marshal(xr["spec"])
				t.Fatalf("accepted, want rejected with %q\nspec: %s", tc.want, b)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("rejected with\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
	if len(cases) < 10 {
		t.Errorf("only %d bad manifests", len(cases))
	}
}
