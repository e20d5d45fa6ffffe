package validate

import (
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// validateShutdown warns where the routing layer cannot drop a pod before it
// drains: a router before 0.1.7 discovering pods by their IP keeps a pod
// while its containers are ready, and vLLM's /health stays 200 while it
// drains, so requests keep reaching it until it exits (those arriving once
// vLLM drains are refused). Service-name discovery (0.1.7 and later) and the
// endpoint picker drop a pod on its deletion.
func validateShutdown(f *Findings, s *resolve.Stack) {
	if resolve.ExtensionOn(s) || s.Router.VersionErr != nil || !s.Router.Version.Version.Less(upstream.RouterDropsTerminatingSince) {
		return
	}
	for _, e := range s.Engines {
		if d := e.Drain; d.Seconds > 0 || d.RoutingDelay > 0 {
			f.warnf("%s.shutdown: router %s keeps sending requests to an engine pod that is being deleted until it exits (router %s and later drop it at once), so requests that reach a draining engine fail: use a router image of %s or later",
				e.Block, s.Router.Version, upstream.RouterDropsTerminatingSince, upstream.RouterDropsTerminatingSince)
			return
		}
	}
}
