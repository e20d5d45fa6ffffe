package upstream

import "strings"

// What the function knows of the production-stack router's command line by
// release (router-flags.tsv and FACTS.md §4 of the upstream facts, kept as
// test data in ../stack/testdata/upstream). Router images are tagged with the chart's
// release (v0.1.9) or the router's own Version (0.1.10.dev5-g…).
var (
	RouterOldest = V(0, 1, 0)
	// 0.1.12; the newest examined code (main of 2026-08-05) adds no flag
	// the function renders.
	RouterNewest = V(0, 1, 12)

	// RouterFlagSince is the first router release that parses each flag the
	// function may render, and the field that makes the function render it.
	// Flags not listed are parsed by every release from 0.1.0.
	RouterFlagSince = map[string]struct {
		Since Version
		Field string
	}{
		"--lmcache-controller-port":           {V(0, 1, 3), "routerType kvaware"},
		"--kv-aware-threshold":                {V(0, 1, 5), "kvAwareThreshold"},
		"--k8s-service-discovery-type":        {V(0, 1, 7), "k8sServiceDiscoveryType"},
		"--lmcache-controller-reply-port":     {V(0, 1, 11), "routerType kvaware"},
		"--lmcache-controller-heartbeat-port": {V(0, 1, 11), "routerType kvaware"},
		"--prefix-min-match-length":           {V(0, 1, 12), "prefixMinMatchLength"},
	}

	// routerLMCache is the LMCache each router release runs its kvaware
	// controller with: the router image installs the extra "lmcache" of its
	// pyproject.toml, pinned to one release (vllm-stack-0.1.3:
	// pyproject.toml:42; 0.1.8: :45; 0.1.9-0.1.12 and HEAD: :48-50). Routers
	// before 0.1.3 have no kvaware. The engines must run the same LMCache
	// release (production-stack PR #1060: the controller rejects a worker of
	// another release's RegisterMsg, and kvaware misses silently).
	routerLMCache = []struct {
		since   Version
		lmcache string
	}{
		{V(0, 1, 3), "0.2.1"},
		{V(0, 1, 8), "0.3.9post2"},
		{V(0, 1, 9), "0.3.11"},
	}

	// RouterReadsSleepModeSince is the first router release that reads
	// whether an engine can sleep from its pod (the exact item
	// "--enable-sleep-mode" in the command of the container named vllm),
	// and then reads each engine's pod and labels a sleeping engine's pod
	// (pod-ip) or Service (service-name): router-sleep-detection.tsv,
	// router-k8s-calls.tsv (vllm-stack-0.1.6:src/vllm_router/service_discovery.py:413-453).
	RouterReadsSleepModeSince = V(0, 1, 6)
	// RouterServiceNameSince is the first release with service-name
	// discovery (vllm-stack-0.1.7, --k8s-service-discovery-type).
	RouterServiceNameSince = V(0, 1, 7)
	// RouterDropsTerminatingSince is the first release whose pod-ip
	// discovery drops an engine pod as soon as it is being deleted (its
	// deletionTimestamp, PR #602: vllm-stack-0.1.7:src/vllm_router/
	// service_discovery.py:407-412,599-602). Before, a pod counts while its
	// containers are ready (vllm-stack-0.1.6:...:373-377,557), and vLLM's
	// /health stays 200 while it drains, so the router keeps sending it
	// requests until it exits.
	RouterDropsTerminatingSince = V(0, 1, 7)

	// RoutingLogicSince is the first release with each --routing-logic.
	RoutingLogicSince = map[string]Version{
		"roundrobin":  V(0, 1, 0),
		"session":     V(0, 1, 0),
		"prefixaware": V(0, 1, 3),
		"kvaware":     V(0, 1, 3),
	}
)

// IsRouterImage reports whether an image repository is the production-stack
// router's, whose tags are router releases.
func IsRouterImage(repo string) bool {
	return repo == "lmcache/lmstack-router" || strings.HasSuffix(repo, "/lmstack-router") || strings.HasSuffix(repo, "production-stack/router")
}

// RouterLMCacheOf is the LMCache release a router release runs its kvaware
// controller with; false before kvaware (0.1.3).
func RouterLMCacheOf(r Version) (string, bool) {
	out := ""
	for _, p := range routerLMCache {
		if r.AtLeast(p.since) {
			out = p.lmcache
		}
	}
	return out, out != ""
}
