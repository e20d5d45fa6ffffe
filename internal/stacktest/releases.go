package stacktest

// Releases is every release of each program the function supports, as the
// metrics contract walks them (stack/observability, stack/
// contract_metrics_test.go), keyed as metrics.tsv names the programs:
// vLLM's releases on PyPI from 0.8.3 (upstream.VLLMOldest) to 0.27.1
// (upstream.VLLMNewest; tags up to v0.10.0 in the vLLM mirror, the later
// ones by FACTS.md §1 and vllm-flags.tsv's header), the router's tags
// vllm-stack-0.1.0 to 0.1.12, GAIE's tags v1.3.0 to v1.5.0 and llm-d's
// v0.6.0 to v0.10.0 (the pickers' mirrors).
var Releases = map[string][]string{
	"vllm": {
		"0.8.3", "0.8.4", "0.8.5", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2",
		"0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0",
		"0.17.0", "0.17.1", "0.18.0", "0.19.0", "0.19.1", "0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0",
		"0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1",
	},
	"router": {"0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.1.4", "0.1.5", "0.1.6", "0.1.7", "0.1.8", "0.1.9", "0.1.10", "0.1.11", "0.1.12"},
	"gaie":   {"1.3.0", "1.3.1", "1.4.0", "1.5.0"},
	"llm-d":  {"0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.10.0"},
}
