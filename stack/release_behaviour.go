package stack

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Checks of what a vLLM or router release does with a stack beyond parsing
// its arguments: a pod that starts and ignores a setting, or one that cannot
// start for a reason outside argparse. The per-release facts are in
// ../upstream (vllm.go, router.go, vllm_envs.tsv).

// unreadVLLMEnv warns about env entries named VLLM_* that the engine's vLLM
// does not read (vllm_envs.tsv): they do nothing, and vLLM from 2026 logs
// "Unknown vLLM environment variable" for them.
func unreadVLLMEnv(f *Findings, e engine) {
	seen := map[string]bool{}
	for _, v := range e.cfg.Env {
		if !strings.HasPrefix(v.Name, "VLLM_") || seen[v.Name] || upstream.VLLMEnvs.MayRead(v.Name, e.vllm.version) {
			continue
		}
		seen[v.Name] = true
		f.warnf("%s.env %s has no effect: vLLM %s does not read it (vllm/envs.py); the variable it reads with the nearest name is %s", e.block, v.Name, e.vllm, upstream.VLLMEnvs.Closest(v.Name, e.vllm.version))
	}
}

// chunkedPrefillIgnored warns that the V1 engine of releases before 0.12.0
// turns chunked prefill on whatever the stack says.
func chunkedPrefillIgnored(f *Findings, e engine) {
	b := e.cfg.VLLMConfig.EnableChunkedPrefill
	ver := e.vllm
	if b == nil || *b || usesV0Engine(e) || ver.version.AtLeast(upstream.VLLMV1ChunkedPrefillOff) {
		return
	}
	alternative := ""
	if ver.version.Less(upstream.VLLMV0EngineGone) {
		alternative = ", or set vllmConfig.v1: false for the V0 engine, which honours it"
	}
	f.warnf("%s.vllmConfig.enableChunkedPrefill false has no effect: the engine runs vLLM %s, whose V1 engine always uses chunked prefill; vLLM %s is the first release that honours it (PR #28665): use an image of vLLM %s or later%s", e.block, ver, upstream.VLLMV1ChunkedPrefillOff, upstream.VLLMV1ChunkedPrefillOff, alternative)
}

// expandableSegmentsWithConnector refuses what vLLM refuses at start: a KV
// connector (LMCache, disaggregation or the user's own --kv-transfer-config)
// with PYTORCH_CUDA_ALLOC_CONF expandable_segments:True, unless the cumem
// allocator is on. Where the release may or may not do so (0.21.x), a
// warning.
func expandableSegmentsWithConnector(f *Findings, e engine) {
	i := slices.IndexFunc(e.cfg.Env, func(v corev1.EnvVar) bool {
		return v.Name == "PYTORCH_CUDA_ALLOC_CONF" && strings.Contains(v.Value, upstream.VLLMExpandableSegmentsSetting)
	})
	ver := e.vllm.version
	if i < 0 || ver.Less(upstream.VLLMKVConnectorMayRefuseExpandable) {
		return
	}
	args := engineArgs(e)
	connector := slices.ContainsFunc(args, func(a string) bool {
		return a == "--kv-transfer-config" || strings.HasPrefix(a, "--kv-transfer-config=")
	})
	cumem := slices.ContainsFunc(args, func(a string) bool {
		return a == "--enable-cumem-allocator" || a == "--enable-sleep-mode"
	})
	if !connector || cumem {
		return
	}
	const why = "with a KV connector (--kv-transfer-config: LMCache, disaggregation or extraArgs), as remapped pages leave the connector's pinned KV cache registrations stale, unless the cumem allocator is on"
	const fix = "remove expandable_segments:True, or add --enable-cumem-allocator to vllmConfig.extraArgs"
	if ver.AtLeast(upstream.VLLMKVConnectorRefusesExpandable) {
		f.errorf("%s.env PYTORCH_CUDA_ALLOC_CONF %q: vLLM %s and later refuse to start %s, and the engine runs vLLM %s: %s", e.block, e.cfg.Env[i].Value, upstream.VLLMKVConnectorRefusesExpandable, why, e.vllm, fix)
		return
	}
	f.warnf("%s.env PYTORCH_CUDA_ALLOC_CONF %q: vLLM %s and later refuse to start %s; the engine runs vLLM %s, which may already: remove expandable_segments:True", e.block, e.cfg.Env[i].Value, upstream.VLLMKVConnectorRefusesExpandable, why, e.vllm)
}

// lmcacheInImage says what the engine's image tells of its LMCache: whether
// it has one (yes, no, or unknown for an image of another family) and, if
// its tag says, which release.
type lmcacheInImage struct {
	image   string
	has     *bool
	release string // "" when the image does not say
}

// engineLMCache reads the engine image's LMCache: lmcache/vllm-openai
// images are tagged with their LMCache release (v0.3.9post2) or a date
// (2025-05-27-v1, latest); vllm/vllm-openai images have an unpinned LMCache
// from 0.9.2 and none before.
func engineLMCache(e engine) lmcacheInImage {
	v := e.cfg.VLLMConfig
	image := imageRef(v.ImagePullRegistry, v.Image)
	repo, tag := upstream.ImageTag(image)
	yes, no := true, false
	switch {
	case isImageOf(repo, lmcacheImage):
		l := lmcacheInImage{image: image, has: &yes}
		if _, ok := upstream.ParseVersion(tag); ok {
			l.release = strings.TrimPrefix(tag, "v")
		}
		return l
	case isImageOf(repo, upstream.VLLMImageRepo):
		if e.vllm.version.Less(upstream.VLLMImageLMCacheFirst) {
			return lmcacheInImage{image: image, has: &no}
		}
		return lmcacheInImage{image: image, has: &yes}
	}
	return lmcacheInImage{image: image}
}

func isImageOf(repo, family string) bool {
	return repo == family || strings.HasSuffix(repo, "/"+family)
}

// validateLMCacheImage refuses an engine whose LMCache connector cannot load
// in its image, and warns where the image may lack what it needs.
func validateLMCacheImage(f *Findings, e engine) {
	ver, l := e.vllm, engineLMCache(e)
	stock := l.has != nil && isImageOf(imageRepo(l.image), upstream.VLLMImageRepo)
	switch {
	case usesV0Engine(e) && ver.version.AtLeast(upstream.VLLMLMCacheV0Gone):
		f.errorf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which vLLM %s removed, and the engine runs vLLM %s: remove vllmConfig.v1 to use LMCacheConnectorV1", e.block, upstream.VLLMLMCacheV0Gone, ver)
	case usesV0Engine(e) && stock:
		f.errorf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and the engine runs vLLM %s in vLLM's own image, which has none: it has no LMCache before %s and from %s the LMCache current when it was built, after LMCache renamed lmcache.experimental to lmcache.v1 (May 2025): remove vllmConfig.v1 to use LMCacheConnectorV1 with vllm/vllm-openai:v%s or later", e.block, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst)
	case usesV0Engine(e):
		f.warnf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and LMCache renamed that to lmcache.v1 in May 2025: the engine (vLLM %s) crashes at start unless %s has an LMCache from before; remove vllmConfig.v1 to use LMCacheConnectorV1", e.block, ver, l.image)
	case stock && !*l.has:
		f.errorf("%s.lmcacheConfig.enabled needs LMCache in the engine's image, and the engine runs vLLM %s in vLLM's own image, which has none (vLLM's images contain LMCache from %s): use vllm/vllm-openai:v%s or later, or an lmcache/vllm-openai image", e.block, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst)
	case ver.version.Less(upstream.VLLMLMCacheV1First):
		f.errorf("%s.lmcacheConfig.enabled needs vLLM %s or later (LMCacheConnectorV1), and the engine runs vLLM %s: use vllm/vllm-openai:v%s or later, whose images contain LMCache, or an lmcache/vllm-openai image of vLLM %s or later", e.block, upstream.VLLMLMCacheV1First, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMLMCacheV1First)
	}
}

func imageRepo(image string) string {
	repo, _ := upstream.ImageTag(image)
	return repo
}

// validateLMCacheLockstep warns when kvaware engines run an LMCache other
// than the router's. The LMCache controller in the router and the workers in
// the engines exchange messages that change between LMCache releases; a
// worker the controller cannot read never registers, and every kvaware
// lookup misses without an error (production-stack PR #1060, which pins
// router and engine LMCache "in lockstep"). Every router that kvaware can
// use here (0.1.11 and later) runs LMCache 0.3.11, so the fix offered is
// the engines' image.
func validateLMCacheLockstep(f *Findings, s *resolvedStack) {
	r := s.router
	if r.routerType != routingKVAware || r.versionErr != nil {
		return
	}
	want, ok := upstream.RouterLMCacheOf(r.version.version)
	if !ok {
		return
	}
	w, _ := upstream.ParseVersion(want)
	for _, e := range s.engines {
		if !kvAware(s, e) || e.vllmErr != nil {
			continue
		}
		l := engineLMCache(e)
		if l.has != nil && !*l.has {
			continue // refused: no LMCache at all
		}
		got, _ := upstream.ParseVersion(l.release)
		switch {
		case l.release == "":
			f.warnf("%s.vllmConfig.image %s does not say which LMCache it runs, and router %s runs LMCache %s for kvaware: the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; pin the engines' LMCache with an lmcache/vllm-openai image whose tag names LMCache %s", e.block, l.image, r.version, want, want)
		case got[0] != w[0] || got[1] != w[1]:
			f.warnf("%s.vllmConfig.image %s runs LMCache %s, and router %s runs LMCache %s for kvaware: an LMCache %d.%d controller rejects the registration of an LMCache %d.%d worker as an unknown message type (production-stack PR #1060), so kvaware misses silently; use an engine image with LMCache %s", e.block, l.image, l.release, r.version, want, w[0], w[1], got[0], got[1], want)
		case got != w:
			f.warnf("%s.vllmConfig.image %s runs LMCache %s, and router %s runs LMCache %s for kvaware: the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; use an engine image with LMCache %s", e.block, l.image, l.release, r.version, want, want)
		}
	}
}
