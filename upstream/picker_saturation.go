package upstream

// PickerPoolSaturationFirst is the first release of each picker that
// exports flow control's pool saturation gauge: GAIE v1.5.0
// (pkg/epp/metrics/metrics.go:446-452; not in v1.3.0 or v1.4.0), and llm-d
// v0.8.0, which runs GAIE v1.5.0's module (go.mod:37@v0.8.0). metrics.tsv,
// GAIE.md (k).
var PickerPoolSaturationFirst = map[string]Version{PickerGAIE: V(1, 5, 0), PickerLLMD: V(0, 8, 0)}

// PickerPoolSaturationMetric is the gauge of flow control's pool
// saturation, labelled inference_pool (1.0 is the point where flow control
// stops dispatching; an empty pool reads 1.0): llm-d v0.9.0+ name it
// llm_d_epp_… and keep the old name, deprecated (both set by
// RecordFlowControlPoolSaturation, LLMD@v0.10.0:pkg/epp/metrics/
// metrics.go:932-935). ok is false for a release without it.
func PickerPoolSaturationMetric(r PickerRelease) (name string, ok bool) {
	first, known := PickerPoolSaturationFirst[r.Kind]
	if !known || !r.AtLeast(first) {
		return "", false
	}
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return "llm_d_epp_flow_control_pool_saturation", true
	}
	return "inference_extension_flow_control_pool_saturation", true
}
