package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCacheServerCommand: every image runs lmcache_server <host> <port>, the
// only server current LMCache ships; lmcache/vllm-openai images from the
// path the chart uses.
func TestCacheServerCommand(t *testing.T) {
	for image, want := range map[string][]string{
		"lmcache/vllm-openai:latest":           {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"lmcache/vllm-openai:latest-nightly":   {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"lmcache/vllm-openai:v0.3.1":           {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"registry.example/team/lmcache:2026.1": {"lmcache_server", "0.0.0.0", "8080"},
	} {
		if diff := cmp.Diff(want, cacheServerCommand(image)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", image, diff)
		}
	}
}
