package stack

import (
	"fmt"
	"strings"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// resolveRouterVersion finds the router release: the image tag when it is a
// release, else routerConfig.routerVersion, then the Input's
// router.version, then the newest supported.
func resolveRouterVersion(image, declared string, in *v1beta1.Input) (programVersion, error) {
	repo, tag := upstream.ImageTag(image)
	if upstream.IsRouterImage(repo) {
		if t, ok := upstream.ParseVersion(tag); ok {
			if d, ok := upstream.ParseVersion(declared); declared != "" && (!ok || d != t) {
				return programVersion{upstream.RouterNewest, ""}, fmt.Errorf("routerVersion %s contradicts image %s, which runs router %s: remove routerVersion or make the two agree", declared, image, t)
			}
			return checkRouterSupported(programVersion{t, "routerConfig.image " + image})
		}
	}
	from := "routerConfig.routerVersion"
	if declared == "" {
		declared, from = in.GetRouter().Version, "the Composition's Input router.version"
	}
	if declared == "" {
		return programVersion{upstream.RouterNewest, "the newest known, as routerConfig.image names no release"}, nil
	}
	d, ok := upstream.ParseVersion(declared)
	if !ok {
		return programVersion{upstream.RouterNewest, ""}, fmt.Errorf("%s %q is not a router release: use a release number such as 0.1.9", from, declared)
	}
	return checkRouterSupported(programVersion{d, from + " " + declared})
}

func checkRouterSupported(p programVersion) (programVersion, error) {
	if p.version.Less(upstream.RouterOldest) {
		return p, fmt.Errorf("router %s is older than %s, the oldest release this function renders arguments for", p, upstream.RouterOldest)
	}
	return p, nil
}

// validateRouterVersion refuses a stack whose router arguments the router
// release would reject: it exits at start-up on a flag or routing logic it
// does not know.
func validateRouterVersion(f *Findings, s *resolvedStack) {
	const p = "spec.routerConfig"
	r := s.router
	if r.versionErr != nil {
		f.errorf("%s: %s", p, r.versionErr)
		return
	}
	if upstream.RouterNewest.Less(r.version.version) {
		f.warnf("%s: router %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, r.version, upstream.RouterNewest, upstream.RouterNewest)
	}
	if since, ok := upstream.RoutingLogicSince[r.routerType]; ok && r.version.version.Less(since) {
		f.errorf("%s.routerType %s needs router %s or later, and the router is %s: use a newer router image or another routerType", p, r.routerType, since, r.version)
		return
	}
	args := routerArgs(s)
	reported := map[string]bool{}
	for _, a := range args[:len(args)-len(r.extraArgs)] {
		a, _, _ = strings.Cut(a, "=") // the flag of --flag=value
		k, ok := upstream.RouterFlagSince[a]
		if !ok || !r.version.version.Less(k.Since) || reported[k.Field] {
			continue
		}
		reported[k.Field] = true
		f.errorf("%s.%s needs router %s or later, the first to parse %s, and the router is %s: use a router image of %s or later", p, k.Field, k.Since, a, r.version, k.Since)
	}
}
