// Package fuzzseeds holds the seeds test/fuzz's FuzzRunFunction and
// tools/kubediff's FuzzComposedObjects share (the same corpus format): a
// value at every field of the blocks of a model's engine settings that only
// some example stacks set, on the stack where it takes effect, and the
// hostile values of a disaggregation group's fields of issue 29.
package fuzzseeds

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Blocks are the blocks of a model's engine settings that only the stacks
// of one example set, with the stack where each of their fields takes
// effect: the example, and the example with its model as an item of models
// (AsModelsItem), for the block in that item.
var Blocks = []struct{ Prefix, Stack string }{
	{Prefix: "spec.disaggregation", Stack: "example/stacks/disaggregated.yaml"},
	{Prefix: "spec.multiNode", Stack: "example/stacks/multi-node.yaml"},
	{Prefix: "spec.models[0].disaggregation", Stack: "example/stacks/disaggregated.yaml as models[0]"},
	{Prefix: "spec.models[0].multiNode", Stack: "example/stacks/multi-node.yaml as models[0]"},
}

// Values are values each field of the blocks takes, by its path below
// the block (a disaggregation group's fields below "group.", the block
// itself by its name): the seeds the fuzzer mutates from.
var Values = map[string]string{
	"multiNode":                                        `{"podsPerReplica": 2}`,
	"disaggregation":                                   `{"transfer": "nixl", "prefill": {"replicas": 1}, "decode": {"replicas": 1}}`,
	"enabled":                                          "true",
	"transfer":                                         `"nixl"`,
	"ucxTLS":                                           `"cuda_ipc,cuda_copy,tcp"`,
	"hostPIDAndIPC":                                    "true",
	"podsPerReplica":                                   "2",
	"group":                                            `{"replicas": 1, "resources": {"gpu": "1", "memory": "32Gi"}}`,
	"group.replicas":                                   "2",
	"group.tensorParallelSize":                         "1",
	"group.resources":                                  `{"cpu": "4", "memory": "16Gi", "gpu": "2", "cpuLimit": "8", "memoryLimit": "32Gi", "gpuType": "nvidia.com/gpu", "gpuMemory": "80Gi"}`,
	"group.resources.cpu":                              `"4"`,
	"group.resources.cpuLimit":                         `"16"`,
	"group.resources.memory":                           `"16Gi"`,
	"group.resources.memoryLimit":                      `"64Gi"`,
	"group.resources.gpu":                              `"2"`,
	"group.resources.gpuType":                          `"nvidia.com/gpu"`,
	"group.resources.gpuMemory":                        `"80Gi"`,
	"group.nodeSelector":                               `{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}`,
	"group.nodeSelector[key]":                          `"NVIDIA-H100-80GB-HBM3"`,
	"group.tolerations":                                `[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]`,
	"group.tolerations[0]":                             `{"key": "pool", "operator": "Equal", "value": "decode", "effect": "NoExecute", "tolerationSeconds": 30}`,
	"group.tolerations[0].key":                         `"pool"`,
	"group.tolerations[0].operator":                    `"Equal"`,
	"group.tolerations[0].value":                       `"decode"`,
	"group.tolerations[0].effect":                      `"NoExecute"`,
	"group.tolerations[0].tolerationSeconds":           "30",
	"group.extraArgs":                                  `["--enforce-eager"]`,
	"group.extraArgs[0]":                               `"--max-num-seqs=64"`,
	"group.autoscaling":                                `{"maxReplicas": 4, "prometheusAddress": "http://prometheus.monitoring:9090", "query": "sum(vllm:num_requests_waiting)"}`,
	"group.autoscaling.enabled":                        `true`,
	"group.autoscaling.type":                           `"keda"`,
	"group.autoscaling.minReplicas":                    `1`,
	"group.autoscaling.maxReplicas":                    `4`,
	"group.autoscaling.threshold":                      `"2"`,
	"group.autoscaling.prometheusAddress":              `"http://prometheus.monitoring:9090"`,
	"group.autoscaling.query":                          `"sum(vllm:num_requests_waiting)"`,
	"group.autoscaling.signal":                         `"engineWaiting"`,
	"group.autoscaling.pollingInterval":                `15`,
	"group.autoscaling.cooldownPeriod":                 `300`,
	"group.autoscaling.initialCooldownPeriod":          `600`,
	"group.autoscaling.idleReplicas":                   `0`,
	"group.autoscaling.fallback":                       `{"failureThreshold": 3, "replicas": 2}`,
	"group.autoscaling.fallback.failureThreshold":      `3`,
	"group.autoscaling.fallback.replicas":              `2`,
	"group.autoscaling.fallback.behavior":              `"currentReplicasIfHigher"`,
	"group.autoscaling.triggers":                       `[{"name": "waiting", "signal": "engineWaiting", "threshold": "2"}]`,
	"group.autoscaling.triggers[0]":                    `{"name": "running", "signal": "pickerRunning", "threshold": "8"}`,
	"group.autoscaling.triggers[0].name":               `"waiting"`,
	"group.autoscaling.triggers[0].signal":             `"engineWaiting"`,
	"group.autoscaling.triggers[0].query":              `"sum(vllm:num_requests_waiting)"`,
	"group.autoscaling.triggers[0].threshold":          `"2"`,
	"group.autoscaling.behavior":                       `{"scaleDown": {"stabilizationWindowSeconds": 300}}`,
	"group.autoscaling.behavior.scaleUp":               `{"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}`,
	"group.autoscaling.behavior.scaleDown":             `{"stabilizationWindowSeconds": 300, "selectPolicy": "Min"}`,
	"group.autoscaling.targetCPUUtilizationPercentage": `70`,
	"group.autoscaling.behavior.scaleUp.stabilizationWindowSeconds":   `120`,
	"group.autoscaling.behavior.scaleUp.selectPolicy":                 `"Max"`,
	"group.autoscaling.behavior.scaleUp.policies":                     `[{"type": "Percent", "value": 50, "periodSeconds": 60}]`,
	"group.autoscaling.behavior.scaleUp.policies[0]":                  `{"type": "Pods", "value": 2, "periodSeconds": 30}`,
	"group.autoscaling.behavior.scaleUp.policies[0].type":             `"Pods"`,
	"group.autoscaling.behavior.scaleUp.policies[0].value":            `1`,
	"group.autoscaling.behavior.scaleUp.policies[0].periodSeconds":    `60`,
	"group.autoscaling.behavior.scaleDown.stabilizationWindowSeconds": `120`,
	"group.autoscaling.behavior.scaleDown.selectPolicy":               `"Max"`,
	"group.autoscaling.behavior.scaleDown.policies":                   `[{"type": "Percent", "value": 50, "periodSeconds": 60}]`,
	"group.autoscaling.behavior.scaleDown.policies[0]":                `{"type": "Pods", "value": 2, "periodSeconds": 30}`,
	"group.autoscaling.behavior.scaleDown.policies[0].type":           `"Pods"`,
	"group.autoscaling.behavior.scaleDown.policies[0].value":          `1`,
	"group.autoscaling.behavior.scaleDown.policies[0].periodSeconds":  `60`,
}

// Hostile are values of a disaggregation group's fields that broke the
// function (issue 29), by path below the group: it panicked on some and
// composed objects the API server refuses from others, as a group's fields
// were not checked as the model's are. Every one is refused now, naming the
// group's field (stack's validateLayers). A value marked pending is one the
// function is known not to refuse yet: the fuzz targets skip it as a seed,
// saying so, and fail once the function refuses it until it is no longer
// marked.
var Hostile = []struct {
	Path, Value string
	Pending     bool
}{
	{"resources.memory", `"lots"`, false}, // resource.MustParse panicked
	{"resources.cpu", `"x"`, false},
	{"resources.cpuLimit", `"8 cores"`, false},
	{"resources.memoryLimit", `"1e999"`, false}, // was composed as a limit of 1e999
	{"resources.gpuType", `"nvidia.com/gpu!"`, false},
	{"resources.gpuMemory", `"24 GB"`, false}, // was ignored
	{"resources.gpuMemory", `"0"`, false},
	{"nodeSelector", `{"bad key!": "gpu"}`, false}, // Deployments the API server refuses
	{"nodeSelector", `{"pool": "bad value!"}`, false},
	{"tolerations", `[{"key": "nvidia.com/gpu", "operator": "Exists", "value": "h100"}]`, false},
	{"tolerations", `[{"key": "pool", "effect": "PreferNoSchedule", "tolerationSeconds": 30}]`, false},
	{"extraArgs", `["--port", "9000"]`, false}, // was rendered after the stack's --port
	{"extraArgs", `["--host=0.0.0.0"]`, false},
}

// A Seed is a fuzz input of the targets: a stack, and up to two values
// at fields of the XRD.
type Seed struct {
	Stack                      []byte
	Path, Value, Path2, Value2 string
}

// Seeds are a seed at every field of the Blocks, on the stack where it
// takes effect, with a value it takes, and the values of Hostile in both
// groups: the fuzzers did not reach these fields from the seeds of the top
// level's fields (issue 29). A tolerations item's fields are set on a
// whole toleration. paths are the fields of the XRD, as the targets pick
// them; stack gives a stack of the corpus by name.
func Seeds(paths []string, stack func(name string) []byte) ([]Seed, error) {
	var seeds []Seed
	for _, b := range Blocks {
		j := stack(b.Stack)
		if j == nil {
			return nil, fmt.Errorf("no stack %s in the corpus", b.Stack)
		}
		for _, p := range paths {
			rest, ok := strings.CutPrefix(p, b.Prefix)
			if !ok || rest != "" && rest[0] != '.' {
				continue
			}
			rest = strings.TrimPrefix(rest, ".")
			key := rest
			if rest == "" {
				key = b.Prefix[strings.LastIndex(b.Prefix, ".")+1:]
			}
			for _, g := range []string{"prefill", "decode"} {
				if rest == g || strings.HasPrefix(rest, g+".") {
					key = "group" + strings.TrimPrefix(rest, g)
				}
			}
			v, ok := Values[key]
			if !ok {
				return nil, fmt.Errorf("no value for %s in fuzzseeds.Values: give the new field one, for the fuzzers to start from", p)
			}
			s := Seed{Stack: j, Path: p, Value: v}
			if tol, _, ok := strings.Cut(p, ".tolerations[0]."); ok {
				s = Seed{Stack: j, Path: tol + ".tolerations", Value: "[" + Values["group.tolerations[0]"] + "]", Path2: p, Value2: v}
			}
			seeds = append(seeds, s)
		}
		if strings.HasSuffix(b.Prefix, "disaggregation") {
			for _, g := range []string{"prefill", "decode"} {
				for _, h := range Hostile {
					seeds = append(seeds, Seed{Stack: j, Path: b.Prefix + "." + g + "." + h.Path, Value: h.Value})
				}
			}
		}
	}
	return seeds, nil
}

// Pending reports whether a fuzz input is a seed of Hostile marked
// pending.
func Pending(stack func(name string) []byte, xrJSON []byte, path, value, path2, value2 string, inputJSON []byte) bool {
	if path2 != "" || value2 != "" || len(inputJSON) > 0 {
		return false
	}
	for _, b := range Blocks {
		if !strings.HasSuffix(b.Prefix, "disaggregation") || string(xrJSON) != string(stack(b.Stack)) {
			continue
		}
		for _, h := range Hostile {
			if h.Pending && value == h.Value && (path == b.Prefix+".prefill."+h.Path || path == b.Prefix+".decode."+h.Path) {
				return true
			}
		}
	}
	return false
}

// modelBlocks are the fields of a model's engine settings that only a
// stack of one such model shows in the examples.
var modelBlocks = []string{"disaggregation", "multiNode"}

// AsModelsItem moves a stack's model, with its modelBlocks, into an item
// of models.
func AsModelsItem(j []byte) ([]byte, error) {
	var xr map[string]any
	if err := json.Unmarshal(j, &xr); err != nil {
		return nil, err
	}
	spec, _ := xr["spec"].(map[string]any)
	model, _ := spec["model"].(map[string]any)
	if model == nil {
		return nil, fmt.Errorf("no spec.model")
	}
	delete(spec, "model")
	for _, b := range modelBlocks {
		if v, ok := spec[b]; ok {
			model[b] = v
			delete(spec, b)
		}
	}
	spec["models"] = []any{model}
	return json.Marshal(xr)
}

// BoundsStack is the stack the seeds of Bounds change: the inference
// extension's example, whose composed custom kinds (HTTPRoutes,
// InferencePools, objectives) grow with the models.
const BoundsStack = "example/stacks/inference-extension.yaml"

// maxModels is the most models the XRD takes (spec.models maxItems).
const maxModels = 64

// Bounds are seeds at the XRD's bounds on BoundsStack, for the limits of
// the composed kinds to be reached (issue 38: 17 models made an HTTPRoute
// of 17 rules, which Gateway API's CRD refuses; a long start-up budget or
// cold start a timeout of 100000m and more, which its duration pattern
// refuses): 17 and 64 models, the longest start-up budget the function
// takes and the longest cold start the XRD takes, alone and with 64
// models; the longest model names (253 characters), under the longest
// stack name (63).
func Bounds(stack func(name string) []byte) ([]Seed, error) {
	j := stack(BoundsStack)
	if j == nil {
		return nil, fmt.Errorf("no stack %s in the corpus", BoundsStack)
	}
	models := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"name": "model-%02d", "modelURL": "org/model-%02d"}`, i, i)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	// Within a Deployment's progress deadline, the function's bound.
	const startup = `{"initialDelaySeconds": 47, "periodSeconds": 2147483, "failureThreshold": 1000}`
	const coldStart = `{"maxReplicas": 3, "prometheusAddress": "http://prometheus.monitoring:9090", "coldStartSeconds": 2147483647}`
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	longNames := fmt.Sprintf(`[{"name": %q, "modelURL": "org/a"}, {"name": %q, "modelURL": "org/b"}]`, long("a", 253), long("a", 252)+"b")
	return []Seed{
		{Stack: j, Path: "spec.models", Value: longNames, Path2: "metadata.name", Value2: fmt.Sprintf("%q", long("s", 63))},
		{Stack: j, Path: "spec.models", Value: models(17)},
		{Stack: j, Path: "spec.models", Value: models(maxModels)},
		{Stack: j, Path: "spec.probes.startup", Value: startup},
		{Stack: j, Path: "spec.scaleToZero", Value: coldStart},
		{Stack: j, Path: "spec.models", Value: models(maxModels), Path2: "spec.probes.startup", Value2: startup},
		{Stack: j, Path: "spec.models", Value: models(maxModels), Path2: "spec.scaleToZero", Value2: coldStart},
	}, nil
}
