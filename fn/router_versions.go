package fn

import (
	"fmt"
	"strings"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
)

// What the function knows of the production-stack router's command line by
// release (router-flags.tsv and FACTS.md §4 of the upstream facts, kept as
// test data in testdata/upstream). Router images are tagged with the chart's
// release (v0.1.9) or the router's own version (0.1.10.dev5-g…).
var (
	routerOldest = v(0, 1, 0)
	// 0.1.12; the newest examined code (main of 2026-08-05) adds no flag
	// the function renders.
	routerNewest = v(0, 1, 12)

	// routerFlagSince is the first router release that parses each flag the
	// function may render, and the field that makes the function render it.
	// Flags not listed are parsed by every release from 0.1.0.
	routerFlagSince = map[string]struct {
		since version
		field string
	}{
		"--lmcache-controller-port":           {v(0, 1, 3), "routerType kvaware"},
		"--kv-aware-threshold":                {v(0, 1, 5), "kvAwareThreshold"},
		"--k8s-service-discovery-type":        {v(0, 1, 7), "k8sServiceDiscoveryType"},
		"--lmcache-controller-reply-port":     {v(0, 1, 11), "routerType kvaware"},
		"--lmcache-controller-heartbeat-port": {v(0, 1, 11), "routerType kvaware"},
		"--prefix-min-match-length":           {v(0, 1, 12), "prefixMinMatchLength"},
	}

	// routerLMCache is the LMCache each router release runs its kvaware
	// controller with: the router image installs the extra "lmcache" of its
	// pyproject.toml, pinned to one release (vllm-stack-0.1.3:
	// pyproject.toml:42; 0.1.8: :45; 0.1.9-0.1.12 and HEAD: :48-50). Routers
	// before 0.1.3 have no kvaware. The engines must run the same LMCache
	// release (production-stack PR #1060: the controller rejects a worker of
	// another release's RegisterMsg, and kvaware misses silently).
	routerLMCache = []struct {
		since   version
		lmcache string
	}{
		{v(0, 1, 3), "0.2.1"},
		{v(0, 1, 8), "0.3.9post2"},
		{v(0, 1, 9), "0.3.11"},
	}

	// routingLogicSince is the first release with each --routing-logic.
	routingLogicSince = map[string]version{
		"roundrobin":  v(0, 1, 0),
		"session":     v(0, 1, 0),
		"prefixaware": v(0, 1, 3),
		"kvaware":     v(0, 1, 3),
	}
)

// isRouterImage reports whether an image repository is the production-stack
// router's, whose tags are router releases.
func isRouterImage(repo string) bool {
	return repo == "lmcache/lmstack-router" || strings.HasSuffix(repo, "/lmstack-router") || strings.HasSuffix(repo, "production-stack/router")
}

// resolveRouterVersion finds the router release: the image tag when it is a
// release, else routerConfig.routerVersion, then the Input's
// router.version, then the newest supported.
func resolveRouterVersion(image, declared string, in *v1beta1.Input) (programVersion, error) {
	repo, tag := imageTag(image)
	if isRouterImage(repo) {
		if t, ok := parseVersion(tag); ok {
			if d, ok := parseVersion(declared); declared != "" && (!ok || d != t) {
				return programVersion{routerNewest, ""}, fmt.Errorf("routerVersion %s contradicts image %s, which runs router %s: remove routerVersion or make the two agree", declared, image, t)
			}
			return checkRouterSupported(programVersion{t, "routerConfig.image " + image})
		}
	}
	from := "routerConfig.routerVersion"
	if declared == "" {
		declared, from = in.GetRouter().Version, "the Composition's Input router.version"
	}
	if declared == "" {
		return programVersion{routerNewest, "the newest known, as routerConfig.image names no release"}, nil
	}
	d, ok := parseVersion(declared)
	if !ok {
		return programVersion{routerNewest, ""}, fmt.Errorf("%s %q is not a router release: use a release number such as 0.1.9", from, declared)
	}
	return checkRouterSupported(programVersion{d, from + " " + declared})
}

func checkRouterSupported(p programVersion) (programVersion, error) {
	if p.version.less(routerOldest) {
		return p, fmt.Errorf("router %s is older than %s, the oldest release this function renders arguments for", p, routerOldest)
	}
	return p, nil
}

// validateRouterVersion refuses a stack whose router arguments the router
// release would reject: it exits at start-up on a flag or routing logic it
// does not know.
func validateRouterVersion(f *findings, s *stack) {
	const p = "spec.routerConfig"
	r := s.router
	if r.versionErr != nil {
		f.errorf("%s: %s", p, r.versionErr)
		return
	}
	if routerNewest.less(r.version.version) {
		f.warnf("%s: router %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, r.version, routerNewest, routerNewest)
	}
	if since, ok := routingLogicSince[r.routerType]; ok && r.version.version.less(since) {
		f.errorf("%s.routerType %s needs router %s or later, and the router is %s: use a newer router image or another routerType", p, r.routerType, since, r.version)
		return
	}
	args := routerArgs(s)
	reported := map[string]bool{}
	for _, a := range args[:len(args)-len(r.extraArgs)] {
		a, _, _ = strings.Cut(a, "=") // the flag of --flag=value
		k, ok := routerFlagSince[a]
		if !ok || !r.version.version.less(k.since) || reported[k.field] {
			continue
		}
		reported[k.field] = true
		f.errorf("%s.%s needs router %s or later, the first to parse %s, and the router is %s: use a router image of %s or later", p, k.field, k.since, a, r.version, k.since)
	}
}

// routerLMCacheOf is the LMCache release a router release runs.
func routerLMCacheOf(r version) (string, bool) {
	out := ""
	for _, p := range routerLMCache {
		if r.atLeast(p.since) {
			out = p.lmcache
		}
	}
	return out, out != ""
}
