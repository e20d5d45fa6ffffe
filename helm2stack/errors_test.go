package helm2stack

import (
	"slices"
	"strings"
	"testing"
)

// minimalModel is a model entry the chart accepts, for cases that break
// another key.
const minimalModel = `
    - name: m
      repository: vllm/vllm-openai
      tag: v0.10.2
      modelURL: facebook/opt-125m
`

// TestErrors: bad values are refused with a message naming the key by its
// full path, and no stack.
func TestErrors(t *testing.T) {
	cases := map[string]struct{ values, want string }{
		"not YAML": {"servingEngineSpec: [a", "the values file is not YAML: yaml: line 1: did not find expected ',' or ']'"},
		"a list":   {"- a\n- b\n", "the values file must be a map of keys (servingEngineSpec, routerSpec, ...), got a list"},
		"empty":    {"", "servingEngineSpec.modelSpec has no enabled model: a stack serves at least one model"},
		"unknown top-level key": {"servingEngine: {}\n",
			"unknown key servingEngine: the chart (vllm-stack 0.1.12) has no such key; check its spelling against the chart's values.yaml"},
		"unknown model key": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      replicas: 2\n",
			"unknown key servingEngineSpec.modelSpec[0].replicas: the chart (vllm-stack 0.1.12) has no such key; check its spelling against the chart's values.yaml"},
		// Neither in the chart (0.1.12 to HEAD) nor in its tutorials.
		"a key the chart lacks": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      lmcacheConfig: {distributedUrl: \"a:1\"}\n",
			"unknown key servingEngineSpec.modelSpec[0].lmcacheConfig.distributedUrl: the chart (vllm-stack 0.1.12) has no such key; check its spelling against the chart's values.yaml"},
		"replicaCount not a number": {"servingEngineSpec:\n  modelSpec:" + minimalModel + strings.Replace(minimalModel, "name: m", "name: m2", 1) + "      replicaCount: two\n",
			`servingEngineSpec.modelSpec[1].replicaCount must be an integer, got "two"`},
		"a routing logic the router does not have": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "routerSpec: {routingLogic: least-loaded}\n",
			`routerSpec.routingLogic must be one of roundrobin, session, prefixaware, kvaware, disaggregated_prefill, got "least-loaded"`},
		"replicaCount a boolean": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      replicaCount: true\n",
			"servingEngineSpec.modelSpec[0].replicaCount must be an integer, got a boolean"},
		"replicaCount a fraction": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      replicaCount: 1.5\n",
			`servingEngineSpec.modelSpec[0].replicaCount must be an integer, got "1.5"`},
		"modelSpec a map": {"servingEngineSpec:\n  modelSpec: {name: m}\n", "servingEngineSpec.modelSpec must be a list, got a map"},
		"model without a name": {"servingEngineSpec:\n  modelSpec:\n    - modelURL: x\n",
			"servingEngineSpec.modelSpec[0].name is required: objects are named after the model"},
		"two models of one name": {"servingEngineSpec:\n  modelSpec:" + minimalModel + minimalModel,
			`servingEngineSpec.modelSpec[1].name "m" is also the name of servingEngineSpec.modelSpec[0]: model names must be unique`},
		"model without an image": {"servingEngineSpec:\n  modelSpec:\n    - name: m\n      modelURL: x\n",
			"servingEngineSpec.modelSpec[0].repository and servingEngineSpec.modelSpec[0].tag are required (the chart refuses a model without them)"},
		"enabled not a boolean": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      enabled: \"no\"\n",
			"servingEngineSpec.modelSpec[0].enabled must be true or false, got a string"},
		"hf_token a number": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      hf_token: 5\n",
			"servingEngineSpec.modelSpec[0].hf_token must be a string or {secretName, secretKey}, got a number"},
		"hf_token without its key": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      hf_token: {secretName: hf}\n",
			"servingEngineSpec.modelSpec[0].hf_token.secretKey is required with secretName"},
		"hf_token with an unknown key": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      hf_token: {name: hf}\n",
			`unknown key "name" in servingEngineSpec.modelSpec[0].hf_token: the chart (vllm-stack 0.1.12) has no such key; check its spelling against the chart's values.yaml`},
		"a toleration of the wrong shape": {"servingEngineSpec:\n  tolerations: [{key: a, tolerationSeconds: soon}]\n  modelSpec:" + minimalModel,
			"servingEngineSpec.tolerations.tolerationSeconds must be a number, got a string"},
		"env not a list": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      env: {A: b}\n",
			"servingEngineSpec.modelSpec[0].env must be a list, got a map"},
		"an unknown key of a block": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "routerSpec:\n  ingress: {enabled: true, hostname: a}\n",
			`unknown key "hostname" in routerSpec.ingress: the chart (vllm-stack 0.1.12) has no such key; check its spelling against the chart's values.yaml`},
		"a volume of the wrong shape": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      extraVolumes: [{name: v, emptyDir: {sizeLimit: [1]}}]\n",
			"servingEngineSpec.modelSpec[0].extraVolumes is not valid: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		"tolerationsPolicy": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      tolerationsPolicy: merge\n",
			`servingEngineSpec.modelSpec[0].tolerationsPolicy must be append or override, got "merge"`},
		"a router API key literal": {"routerSpec:\n  vllmApiKey: abc\nservingEngineSpec:\n  modelSpec:" + minimalModel,
			"routerSpec.vllmApiKey must be {secretName, secretKey} (the chart takes a literal key in servingEngineSpec.vllmApiKey only), got a string"},
		"a strategy type": {"servingEngineSpec:\n  strategy: {type: BlueGreen}\n  modelSpec:" + minimalModel,
			`servingEngineSpec.strategy.type must be RollingUpdate or Recreate, got "BlueGreen"`},
		"only disabled models": {"servingEngineSpec:\n  modelSpec:" + minimalModel + "      enabled: false\n",
			"servingEngineSpec.modelSpec has no enabled model: a stack serves at least one model"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Convert([]byte(tc.values), Options{Name: "s"})
			if err == nil {
				t.Fatalf("no error, want %q; got a stack %+v", tc.want, res.Stack.Spec)
			}
			if res != nil {
				t.Errorf("a result next to the error: %+v", res)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestConvertNeedsAName(t *testing.T) {
	values := []byte("servingEngineSpec:\n  modelSpec:" + minimalModel)
	for name, want := range map[string]string{
		"":                      "the stack needs a name (the chart's release name)",
		"Vllm":                  `the stack name "Vllm" is not a Helm release name: use at most 53 lower case letters, digits and '-', starting and ending with a letter or digit`,
		strings.Repeat("a", 54): `the stack name "` + strings.Repeat("a", 54) + `" is not a Helm release name: use at most 53 lower case letters, digits and '-', starting and ending with a letter or digit`,
	} {
		if res, err := Convert(values, Options{Name: name}); err == nil || err.Error() != want || res != nil {
			t.Errorf("name %q: got %v, want %s", name, err, want)
		}
	}
	// 53 characters: S-storage is a volume name as it is (the function
	// does not shorten it).
	if _, err := Convert(values, Options{Name: strings.Repeat("a", 53)}); err != nil {
		t.Errorf("a 53-character name: %v", err)
	}
	// The chart's shared storage volume S-shared-pvc-storage takes 19 more.
	shared := append(slices.Clone(values), "sharedPvcStorage: {enabled: true}\n"...)
	wantShared := "sharedPvcStorage: the chart's volume name " + strings.Repeat("a", 45) + "-shared-pvc-storage is over 63 characters, which Kubernetes refuses: use a stack name (--name) of at most 44 characters"
	if res, err := Convert(shared, Options{Name: strings.Repeat("a", 45)}); err == nil || err.Error() != wantShared || res != nil {
		t.Errorf("shared storage with a 45-character name: got %v, want %s", err, wantShared)
	}
	if _, err := Convert(shared, Options{Name: strings.Repeat("a", 44)}); err != nil {
		t.Errorf("shared storage with a 44-character name: %v", err)
	}
}
