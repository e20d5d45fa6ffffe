package resolve

import (
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The startup probe's budget: how long an engine may take to download and
// load its weights before the kubelet restarts it. A restart in the middle
// of a download starts it over, so a budget that is too short for a large
// model never lets it start. The budget grows with the size the model's name
// announces (Llama-3.1-70B-Instruct: 70 billion parameters), and
// probes.startup overrides it.
const (
	StartupPeriod = 10 // seconds between startup probes, by default
	// At least 10 minutes, at most 2 hours.
	minStartupSeconds = 600
	maxStartupSeconds = 7200
	// Seconds for the process to start and the GPU to warm up, plus
	// seconds per GB of weights: a download at about 100 MB/s, then the load.
	startupBaseSeconds  = 300
	startupSecondsPerGB = 10
)

// paramsInName finds a parameter count in a model name: 70B, 0.5B, 135M,
// 8x7B (a mixture of experts: all experts are downloaded). The size must
// stand between separators, so "v3" or "Qwen2" are not sizes.
var paramsInName = regexp.MustCompile(`(?i)(?:^|[-_./])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?:$|[-_./])`)

// quantizedBytes are the bytes per parameter that a quantization named in
// the model name implies; unquantized weights are 16-bit: 2 bytes.
var quantizedBytes = []struct {
	marker string
	bytes  float64
}{
	{"awq", 0.5}, {"gptq", 0.5}, {"int4", 0.5}, {"4bit", 0.5}, {"w4a16", 0.5}, {"nf4", 0.5},
	{"fp8", 1}, {"int8", 1}, {"8bit", 1}, {"w8a8", 1},
}

// ModelBillions is the parameter count, in billions, that the model's name
// announces, and whether it announces one.
func ModelBillions(name string) (float64, bool) {
	m := paramsInName.FindStringSubmatch(path.Base(name))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0, false
	}
	if m[1] != "" {
		experts, _ := strconv.ParseFloat(m[1], 64)
		n *= experts
	}
	if strings.EqualFold(m[3], "m") {
		n /= 1000
	}
	return n, true
}

// parameterCount reads model.parameterCount (70B, 8x7B, 135M; the XRD's
// pattern holds) as billions.
var parameterCount = regexp.MustCompile(`^(?:(\d+)x)?(\d+(?:\.\d+)?)([bBmM])$`)

// EngineWeightsGB estimates the size of an engine's weights: from
// model.parameterCount when set, else from the size its name announces; the
// bytes per parameter from the quantization its name says. said tells where
// the size comes from, for messages.
func EngineWeightsGB(e Engine) (gb float64, said string, ok bool) {
	name := e.Model.ModelURL
	if name == "" {
		name = e.Model.Path
	}
	pc := e.Model.ParameterCount
	if pc == "" {
		gb, ok = weightsGB(name)
		return gb, name, ok
	}
	m := parameterCount.FindStringSubmatch(pc)
	if m == nil {
		return 0, "", false
	}
	b, _ := strconv.ParseFloat(m[2], 64)
	if m[1] != "" {
		experts, _ := strconv.ParseFloat(m[1], 64)
		b *= experts
	}
	if strings.EqualFold(m[3], "m") {
		b /= 1000
	}
	return b * bytesPerParameter(name), "model.parameterCount " + pc, true
}

// weightsGB estimates the size of the model's weights from its name.
func weightsGB(name string) (float64, bool) {
	b, ok := ModelBillions(name)
	if !ok {
		return 0, false
	}
	return b * bytesPerParameter(name), true
}

// bytesPerParameter is what the quantization a model's name says implies,
// else 16-bit.
func bytesPerParameter(name string) float64 {
	bytes := 2.0
	lower := strings.ToLower(path.Base(name))
	for _, q := range quantizedBytes {
		if strings.Contains(lower, q.marker) {
			bytes = q.bytes
			break
		}
	}
	return bytes
}

// StartupSeconds is how long the engine may take to start.
func StartupSeconds(e Engine) int {
	gb, _, ok := EngineWeightsGB(e)
	if !ok {
		return minStartupSeconds
	}
	seconds := int(math.Ceil(startupBaseSeconds + startupSecondsPerGB*gb))
	return min(max(seconds, minStartupSeconds), maxStartupSeconds)
}
