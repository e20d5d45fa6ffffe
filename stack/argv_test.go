package stack

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/internal/argvcheck"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// argvTables are the option tables the invariant parses command lines with.
func argvTables(t *testing.T) (vllm, router argvcheck.Table) {
	t.Helper()
	vllm, err := argvcheck.LoadTable(stacktest.UpstreamDir + "/vllm-flags.tsv")
	if err != nil {
		t.Fatal(err)
	}
	router, err = argvcheck.LoadTable(stacktest.UpstreamDir + "/router-flags.tsv")
	if err != nil {
		t.Fatal(err)
	}
	return vllm, router
}

// argvProblems builds xr and checks the argument-injection invariant on
// what it composed; ok is false when the function refused the stack.
func argvProblems(t *testing.T, xr map[string]any) (problems []string, ok bool) {
	t.Helper()
	vllm, router := argvTables(t)
	b := reconciled(t, xr, stacktest.InputFor(xr))
	if b.refusal != "" {
		return nil, false
	}
	j, err := json.Marshal(xr["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var spec v1alpha1.ProductionStackSpec
	if err := json.Unmarshal(j, &spec); err != nil {
		t.Fatal(err)
	}
	var objects []map[string]any
	for _, k := range b.keys {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b.objects[k])
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, m)
	}
	return argvcheck.CheckObjects(&spec, objects, vllm, router), true
}

// TestArgvInvariant: in every example and test stack, every value of the
// spec lands in exactly the option or positional it was meant for.
func TestArgvInvariant(t *testing.T) {
	for _, path := range stacktest.Stacks(t) {
		problems, ok := argvProblems(t, stacktest.LoadXR(t, path, ""))
		if !ok {
			t.Errorf("%s: refused", path)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", path, p)
		}
	}
}

// TestArgvInvariantHostile: values the function accepts that look like
// options, or hold '=', ',' or spaces, still land where they belong.
func TestArgvInvariantHostile(t *testing.T) {
	cases := map[string]map[string]any{
		"SessionKeyLikeAnOption": with("routerConfig.routerType", "session", "routerConfig.sessionKey", "--static-backends"),
		"SessionKeyShortOption":  with("routerConfig.routerType", "session", "routerConfig.sessionKey", "-h"),
		"KVAwareSessionKey": with("routerConfig.routerType", "kvaware", "routerConfig.sessionKey", "--config", "lmcacheConfig.enabled", true,
			"routerConfig.kvAwareThreshold", 3),
		"RevisionWithDots": with("model.revision", "v1.0/refs.pr"),
		"ServedNameDotted": with("model.servedModelName", "org/a.b:c"),
		"LoRAPathWithComma": with("model.enableLoRA", true, "model.loraAdapters", []any{
			map[string]any{"name": "a", "path": "/data/a,b=c"}, map[string]any{"name": "b_2", "path": "org/b"}}),
		"PathWithSpaces":   with("model.path", "/models/my model", "model.name", "my"),
		"ModelURLOnS3":     with("model.modelURL", "s3://bucket/models/llama"),
		"ExtraArgsKept":    with("vllmConfig.extraArgs", []any{"--seed", "1"}, "routerConfig.extraArgs", []any{"--log-level", "debug"}),
		"ToolParserDotted": with("model.enableTool", true, "model.toolCallParser", "my.parser-2"),
		"Disaggregated": with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
			"routerConfig.routerType", "roundrobin", "vllmConfig.tensorParallelSize", 1, "vllmConfig.extraArgs", []any{"--seed=1"},
			"disaggregation", map[string]any{
				"prefill": map[string]any{"extraArgs": []any{"--max-num-batched-tokens=8192"}},
				"decode":  map[string]any{"tensorParallelSize": 2, "resources": map[string]any{"gpu": "2"}},
			}),
	}
	for name, xr := range cases {
		t.Run(name, func(t *testing.T) {
			problems, ok := argvProblems(t, xr)
			if !ok {
				t.Fatalf("refused: %s", refusal(t, xr))
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// TestArgvCheckCatchesInjection: the invariant's checks find each way a
// value can fail to land (the command lines of the function before issue
// 18, and others).
func TestArgvCheckCatchesInjection(t *testing.T) {
	vllm, router := argvTables(t)
	one := func(field, option, v string) argvcheck.Want {
		return argvcheck.Want{Field: field, Option: option, Values: []string{v}}
	}
	cases := map[string]struct {
		t     argvcheck.Table
		args  []string
		wants []argvcheck.Want
		pos   bool
		want  []string
	}{
		"ModelReadAsOption": {vllm, []string{"--trust-remote-code", "--served-model-name", "m"},
			[]argvcheck.Want{one("spec.model.path", "", "--trust-remote-code")}, true,
			[]string{`spec.model.path: the positionals holds [], want ["--trust-remote-code"]`, `spec.model.path: its value "--trust-remote-code" was read as an option`}},
		"ValueTakenAsOption": {vllm, []string{"org/m", "--tool-call-parser", "--trust-remote-code"},
			[]argvcheck.Want{one("spec.model", "", "org/m"), one("spec.model.toolCallParser", "--tool-call-parser", "--trust-remote-code")}, true,
			[]string{`spec.model.toolCallParser: --tool-call-parser holds [], want ["--trust-remote-code"]`, `spec.model.toolCallParser: its value "--trust-remote-code" was read as an option`}},
		"ListSwallowsPositional": {vllm, []string{"--served-model-name", "a", "org/m"},
			[]argvcheck.Want{one("spec.model.modelURL", "", "org/m"), one("spec.model.servedModelName", "--served-model-name", "a")}, true,
			[]string{`spec.model.modelURL: the positionals holds [], want ["org/m"]`, `spec.model.servedModelName: --served-model-name holds ["a" "org/m"], want ["a"]`}},
		"RouterValueTakenAsOption": {router, []string{"--routing-logic", "session", "--session-key", "--static-backends", "--engine-stats-interval", "15"},
			[]argvcheck.Want{one("spec.routerConfig.sessionKey", "--session-key", "--static-backends")}, false,
			[]string{`spec.routerConfig.sessionKey: --session-key holds [], want ["--static-backends"]`, `spec.routerConfig.sessionKey: its value "--static-backends" was read as an option`}},
		"Twice": {router, []string{"--session-key=a", "--session-key=b"},
			[]argvcheck.Want{one("spec.routerConfig.sessionKey", "--session-key", "b")}, false,
			[]string{`spec.routerConfig.sessionKey: --session-key occurs 2 times, want once holding ["b"]`}},
		"StrayPositional": {router, []string{"--routing-logic", "session", "x"}, nil, false,
			[]string{`positionals ["x"]: the program takes none`}},
		"LoRASplitByVLLM": {vllm, []string{"org/m", "--lora-modules", "a=b=c"},
			[]argvcheck.Want{one("spec.model", "", "org/m"), {Field: "spec.model.loraAdapters", Option: "--lora-modules", Values: []string{"a=b=c"}, Decode: argvcheck.LoRAModule}}, true,
			[]string{`spec.model.loraAdapters: --lora-modules "a=b=c": vLLM cannot split it into name=path`, `spec.model.loraAdapters: --lora-modules holds [""], want ["a=b=c"]`}},
		"EqualsFormLands": {vllm, []string{"-x", "--tool-call-parser=--trust-remote-code"},
			[]argvcheck.Want{one("spec.model.path", "", "-x")}, true,
			[]string{`spec.model.path: the positionals holds [], want ["-x"]`, `spec.model.path: its value "-x" was read as an option`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := argvcheck.Check(tc.t, tc.args, nil, tc.wants, tc.pos)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
	if got := argvcheck.Check(vllm, []string{"org/m", "--tool-call-parser=--x", "--seed", "1"}, []string{"--seed", "1"},
		[]argvcheck.Want{{Field: "m", Values: []string{"org/m"}}, {Field: "p", Option: "--tool-call-parser", Values: []string{"--x"}}}, true); got != nil {
		t.Errorf("--flag=value with an option-like value: problems %q, want none", got)
	}
}

// TestArgvOverridden: the invariant holds after the user's extraArgs too:
// an element that gives a spec value's option again, in a spelling the
// program reads as it, is a problem.
func TestArgvOverridden(t *testing.T) {
	wants := []argvcheck.Want{{Field: "spec.model", Values: []string{"org/m"}}, {Field: "spec.model.maxModelLen", Option: "--max-model-len", Values: []string{"4096"}},
		{Field: "spec.vllmConfig.enablePrefixCaching", Option: "--enable-prefix-caching"}}
	got := argvcheck.Overridden(wants, []string{"--seed", "1", "--max_model_len", "8", "--no-enable-prefix-caching", "--max-model-len-x"}, argvcheck.VLLMOption)
	want := []string{`spec.model.maxModelLen: extraArgs "--max_model_len" give --max-model-len again, after the stack's`,
		`spec.vllmConfig.enablePrefixCaching: extraArgs "--no-enable-prefix-caching" give --enable-prefix-caching again, after the stack's`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n got: %q\nwant: %q", got, want)
	}
}

// TestArgvForms: every release the contract test renders for reads
// --flag=value with its value verbatim (testdata/upstream/argv-forms.tsv).
func TestArgvForms(t *testing.T) {
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "argv-forms.tsv"), 5)
	if err != nil {
		t.Fatal(err)
	}
	covered := func(program, release string) bool {
		v, _ := parseUpVersion(release)
		for _, r := range rows {
			first, err1 := parseUpVersion(r[1])
			last, err2 := parseUpVersion(r[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("argv-forms.tsv: bad release in %q", r)
			}
			if r[0] == program && r[3] == "eq-verbatim" && v.in(first, last) {
				return true
			}
		}
		return false
	}
	for _, r := range stacktest.VLLMReleases {
		if !covered("vllm", r) {
			t.Errorf("vLLM %s: argv-forms.tsv has no eq-verbatim row: read how it parses --flag=value first", r)
		}
	}
	for _, r := range stacktest.RouterReleases {
		if !covered("router", r) {
			t.Errorf("router %s: argv-forms.tsv has no eq-verbatim row", r)
		}
	}
}

// TestModelShapes: a value vLLM would read as an option, or that can never
// be what its field names, is refused with a message naming the field.
func TestModelShapes(t *testing.T) {
	const m = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"PathLikeAnOption": {with("model.path", "--trust-remote-code"),
			`spec.model.path "--trust-remote-code" is invalid: use an absolute path to the model files, such as /data/models/llama-3 (starting with '/', without control characters)`},
		"RelativePath": {with("model.path", "models/m"),
			`spec.model.path "models/m" is invalid: use an absolute path to the model files, such as /data/models/llama-3 (starting with '/', without control characters)`},
		"ModelURLLikeAnOption": {with("model.modelURL", "-h"),
			`spec.model.modelURL "-h" is invalid: use a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct (letters, digits, '.', '_' and '-', starting with a letter, digit or '_', with at most one '/' between organization and name), an absolute path, or a URL such as s3://bucket/model`},
		"ModelURLWithSpace": {with("model.modelURL", "meta-llama/Llama 3"),
			`spec.model.modelURL "meta-llama/Llama 3" is invalid: use a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct (letters, digits, '.', '_' and '-', starting with a letter, digit or '_', with at most one '/' between organization and name), an absolute path, or a URL such as s3://bucket/model`},
		"ServedName": {with("model.servedModelName", "--trust-remote-code"),
			`spec.model.servedModelName "--trust-remote-code" is invalid: use letters, digits, '.', '_', ':', '/' and '-', starting with a letter, digit or '_', such as llama3 or meta-llama/Llama-3.2-1B-Instruct`},
		"ToolParser": {with("model.enableTool", true, "model.toolCallParser", "hermes --trust-remote-code"),
			`spec.model.toolCallParser "hermes --trust-remote-code" is invalid: use a parser name such as hermes, llama3_json or mistral (letters, digits, '.', '_' and '-', starting with a letter, digit or '_')`},
		"LoRAName": {with("model.enableLoRA", true, "model.loraAdapters", []any{map[string]any{"name": "-a", "path": "/a"}}),
			`spec.model.loraAdapters[0].name "-a" is invalid: use letters, digits, '.', '_', ':', '/' and '-', starting with a letter, digit or '_', such as llama3 or meta-llama/Llama-3.2-1B-Instruct`},
		"LoRAPath": {with("model.enableLoRA", true, "model.loraAdapters", []any{map[string]any{"name": "a", "path": "--x"}}),
			`spec.model.loraAdapters[0].path "--x" is invalid: use a Hugging Face adapter ID such as org/sql-lora or an absolute path such as /data/lora-adapters/sql`},
		"ModelsItem": {with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "--a"}}),
			`spec.models[0].modelURL "--a" is invalid: use a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct (letters, digits, '.', '_' and '-', starting with a letter, digit or '_', with at most one '/' between organization and name), an absolute path, or a URL such as s3://bucket/model`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != m+tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, m+tc.want)
			}
		})
	}
}
