package fuzz_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
)

// secretRefs are the Secrets a spec names: hfTokenSecret, apiKeySecret,
// envFrom secretRef, env secretKeyRef, imagePullSecretName, volumes.
func secretRefs(v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "hfTokenSecret", "apiKeySecret", "secretRef", "secretKeyRef":
				if m, ok := x.(map[string]any); ok {
					if name, _ := m["name"].(string); name != "" {
						out[name] = true
					}
				}
			case "secret":
				if m, ok := x.(map[string]any); ok {
					if name, _ := m["secretName"].(string); name != "" {
						out[name] = true
					}
				}
			case "imagePullSecretName", "tlsSecretName":
				if name, _ := x.(string); name != "" {
					out[name] = true
				}
			}
			secretRefs(x, out)
		}
	case []any:
		for _, x := range v {
			secretRefs(x, out)
		}
	}
}

// TestNoSecretValues renders every example and test stack, on its first
// reconcile and once it serves, with a cluster that sends, as observed
// composed resources and as the resources of every requirement, each Secret
// the spec names, its data a canary: no composed object, result, condition
// or status holds a canary. Then with a literal HF_TOKEN and VLLM_API_KEY in
// each env list of the spec: each shows only in the env entry the user
// wrote it in, and a warning says so (checkSecrets, which FuzzRunFunction
// runs on every input).
func TestNoSecretValues(t *testing.T) {
	c := mustLoad(t)
	for _, s := range c.stacks {
		t.Run(s.name, func(t *testing.T) {
			var xr map[string]any
			if err := json.Unmarshal(s.json, &xr); err != nil {
				t.Fatal(err)
			}
			refs := map[string]bool{}
			secretRefs(xr["spec"], refs)
			n := 0
			secrets := map[string]map[string]any{}
			var items []map[string]any
			for name := range refs {
				secret := map[string]any{
					"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name},
					"data": map[string]any{"token": canary(n)}, "stringData": map[string]any{"token": canary(n + 1)},
				}
				n += 2
				secrets["secret-"+name] = secret
				items = append(items, secret)
			}
			// A healthy first reconcile, to observe what it composed.
			r, err := request(xr, c.input, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			first := runTwice(t, r)
			if msg, refused := fatalOf(first); refused {
				if len(refs) > 0 {
					r, _ = request(xr, c.input, secrets, nil)
					if b, _ := protojson.Marshal(runTwice(t, r)); strings.Contains(string(b), canaryMark) {
						t.Errorf("the refusal holds data of a Secret: %s", b)
					}
				}
				t.Logf("refused (as the render tests expect of it): %s", msg)
				return
			}
			observed := map[string]map[string]any{}
			for k, d := range first.GetDesired().GetResources() {
				observed[k] = d.GetResource().AsMap()
			}
			for k, v := range secrets {
				observed[k] = v
			}
			required := map[string][]map[string]any{}
			for k := range first.GetRequirements().GetResources() {
				required[k] = items
			}
			// Secrets in the place of composed objects, too.
			hostile := map[string]map[string]any{}
			for k, v := range observed {
				hostile[k] = v
			}
			for _, k := range []string{"router", "router-service"} {
				if len(items) > 0 {
					hostile[k] = items[0]
				}
			}
			for _, obs := range []map[string]map[string]any{observed, hostile} {
				r, err := request(xr, c.input, obs, required)
				if err != nil {
					t.Fatal(err)
				}
				rsp := runTwice(t, r)
				if b, _ := protojson.Marshal(rsp); strings.Contains(string(b), canaryMark) {
					t.Errorf("the response holds data of a Secret the spec names: %s", b)
				}
			}
			// Literal credentials in every env list.
			lit := withLiteralCredentials(xr)
			if !checkSecrets(t, lit, c.input, nil) || !checkSecrets(t, lit, c.input, observed) {
				t.Errorf("no composed container kept the literal credentials the spec wrote into env")
			}
		})
	}
}

// withLiteralCredentials is a copy of xr with a literal HF_TOKEN and
// VLLM_API_KEY added to the engine env of the spec and of each model, and
// to the router's.
func withLiteralCredentials(xr map[string]any) map[string]any {
	b, _ := json.Marshal(xr)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	add := func(m map[string]any) {
		env, _ := m["env"].([]any)
		m["env"] = append(env,
			map[string]any{"name": "HF_TOKEN", "value": "hf_placeholder"},
			map[string]any{"name": "VLLM_API_KEY", "value": "key_placeholder"})
	}
	spec, _ := out["spec"].(map[string]any)
	if spec == nil {
		return out
	}
	add(spec)
	if models, ok := spec["models"].([]any); ok {
		for _, m := range models {
			if m, ok := m.(map[string]any); ok {
				add(m)
			}
		}
	}
	rc, _ := spec["routerConfig"].(map[string]any)
	if rc == nil {
		rc = map[string]any{}
		spec["routerConfig"] = rc
	}
	add(rc)
	return out
}
