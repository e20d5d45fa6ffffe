package validate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// routerDisaggregatedLMCacheAt is the first router whose service discovery
// keeps a client for each group, found by --prefill-model-labels and
// --decode-model-labels; 0.1.3 parses the flags but sends the prefill
// engine the request's own bytes, so it generates the whole answer too.
var routerDisaggregatedLMCacheAt = upstream.V(0, 1, 4)

// validateLMCacheTransfer refuses what LMCache's mid-2025 path and the
// router's disaggregated_prefill logic cannot serve as asked.
func validateLMCacheTransfer(f *Findings, s *resolve.Stack, groups []resolve.Engine) {
	e := groups[0]
	p := e.Block + ".disaggregation"
	if image, date, ok := resolve.LMCacheTransferImageDate(e); !ok {
		f.errorf("%s.transfer lmcache needs the NIXL backend of mid-2025 LMCache, which the function can only tell from an %s image tagged with its build date, and the engine's image is %s: use %s:%s-v1 (the chart's), or transfer nixl", p, resolve.LMCacheTransferRepository, image, resolve.LMCacheTransferRepository, resolve.LMCacheTransferFirstDate)
	} else if date < resolve.LMCacheTransferFirstDate || date > resolve.LMCacheTransferLastDate {
		f.errorf("%s.transfer lmcache needs the NIXL backend of mid-2025 LMCache, in images built from %s to %s, and the engine's image %s was built %s: LMCache#1579 (2025-09-12) replaced it with a backend that waits for a request field no router release sends; use %s:%s-v1 (the chart's), or transfer nixl", p, resolve.LMCacheTransferFirstDate, resolve.LMCacheTransferLastDate, image, date, resolve.LMCacheTransferRepository, resolve.LMCacheTransferFirstDate)
	}
	if e.VLLMErr == nil && e.VLLM.Version.Less(upstream.VLLMLMCacheV1First) {
		f.errorf("%s.transfer lmcache needs vLLM %s or later (LMCacheConnectorV1), and the engine runs vLLM %s: remove engineVersion or declare the vLLM the image runs", p, upstream.VLLMLMCacheV1First, e.VLLM)
	}
	for _, g := range groups {
		if tp := g.TensorParallel; tp > 1 {
			f.errorf("%s: transfer lmcache takes one receiver port per engine, and tensorParallelSize %d runs %d workers that each need one (how LMCache spread ranks over ports changed in July 2025, LMCache#1039, and an image does not say which it has): use tensorParallelSize 1 or transfer nixl", g.GroupPath(), tp, tp)
		}
		switch n := *g.Cfg.Replicas; {
		case g.Role == resolve.RoleDecode && n > 1:
			f.errorf("%s.replicas %d: with transfer lmcache the prefill engine pushes the KV cache to the decode Service, which picks any decode pod, while the router decodes on one of them: use one decode engine, or transfer nixl, where the router names the prefill pod to every decode engine", g.GroupPath(), n)
		case g.Role == resolve.RolePrefill && n > 1:
			f.warnf("%s.replicas %d: the router's disaggregated_prefill logic sends every prompt to one prefill engine (the last it discovered), so the others stay idle: use one prefill engine, or transfer nixl, which spreads prompts over all", g.GroupPath(), n)
		}
	}
	r := s.Router
	if r.VersionErr == nil && r.Version.Version.Less(routerDisaggregatedLMCacheAt) {
		f.errorf("%s.transfer lmcache needs router %s or later, the first that keeps a client per group for --routing-logic %s, and the router is %s: use a newer router image", p, routerDisaggregatedLMCacheAt, resolve.RoutingDisaggregatedLMCache, r.Version)
	}
}

// Checks of what a vLLM or router release does with a stack beyond parsing
// its arguments: a pod that starts and ignores a setting, or one that cannot
// start for a reason outside argparse. The per-release facts are in
// ../upstream (vllm.go, router.go, vllm_envs.tsv).

// unreadVLLMEnv warns about env entries named VLLM_* that the engine's vLLM
// does not read (vllm_envs.tsv): they do nothing, and vLLM from 2026 logs
// "Unknown vLLM environment variable" for them.
func unreadVLLMEnv(f *Findings, e resolve.Engine) {
	seen := map[string]bool{}
	for _, v := range e.Cfg.Env {
		if !strings.HasPrefix(v.Name, "VLLM_") || seen[v.Name] || upstream.VLLMEnvs.MayRead(v.Name, e.VLLM.Version) {
			continue
		}
		seen[v.Name] = true
		f.warnf("%s.env %s has no effect: vLLM %s does not read it (vllm/envs.py); the variable it reads with the nearest name is %s", e.Block, v.Name, e.VLLM, upstream.VLLMEnvs.Closest(v.Name, e.VLLM.Version))
	}
}

// chunkedPrefillIgnored warns that the V1 engine of releases before 0.12.0
// turns chunked prefill on whatever the stack says.
func chunkedPrefillIgnored(f *Findings, e resolve.Engine) {
	b := e.Cfg.VLLMConfig.EnableChunkedPrefill
	ver := e.VLLM
	if b == nil || *b || e.V0Engine || ver.Version.AtLeast(upstream.VLLMV1ChunkedPrefillOff) {
		return
	}
	alternative := ""
	if ver.Version.Less(upstream.VLLMV0EngineGone) {
		alternative = ", or set vllmConfig.v1: false for the V0 engine, which honours it"
	}
	f.warnf("%s.vllmConfig.enableChunkedPrefill false has no effect: the engine runs vLLM %s, whose V1 engine always uses chunked prefill; vLLM %s is the first release that honours it (PR #28665): use an image of vLLM %s or later%s", e.Block, ver, upstream.VLLMV1ChunkedPrefillOff, upstream.VLLMV1ChunkedPrefillOff, alternative)
}

// expandableSegmentsWithConnector refuses what vLLM refuses at start: a KV
// connector (LMCache, disaggregation, kvOffloading or the user's own --kv-transfer-config)
// with PYTORCH_CUDA_ALLOC_CONF expandable_segments:True, unless the cumem
// allocator is on. Where the release may or may not do so (0.21.x), a
// warning.
func expandableSegmentsWithConnector(f *Findings, e resolve.Engine) {
	i := slices.IndexFunc(e.Cfg.Env, func(v corev1.EnvVar) bool {
		return v.Name == "PYTORCH_CUDA_ALLOC_CONF" && strings.Contains(v.Value, upstream.VLLMExpandableSegmentsSetting)
	})
	ver := e.VLLM.Version
	if i < 0 || ver.Less(upstream.VLLMKVConnectorMayRefuseExpandable) {
		return
	}
	args := build.EngineArgs(e)
	// --kv-offloading-size sets the connector before the check runs
	// (vllm/config/vllm.py:1428,1526@4ff865c38).
	connector := slices.ContainsFunc(args, func(a string) bool {
		return a == "--kv-transfer-config" || strings.HasPrefix(a, "--kv-transfer-config=") || strings.HasPrefix(a, "--kv-offloading-size=")
	})
	cumem := slices.ContainsFunc(args, func(a string) bool {
		return a == "--enable-cumem-allocator" || a == "--enable-sleep-mode"
	})
	if !connector || cumem {
		return
	}
	const why = "with a KV connector (--kv-transfer-config or --kv-offloading-size: LMCache, disaggregation, kvOffloading or extraArgs), as remapped pages leave the connector's pinned KV cache registrations stale, unless the cumem allocator is on"
	const fix = "remove expandable_segments:True, or add --enable-cumem-allocator to vllmConfig.extraArgs"
	if ver.AtLeast(upstream.VLLMKVConnectorRefusesExpandable) {
		f.errorf("%s.env PYTORCH_CUDA_ALLOC_CONF %q: vLLM %s and later refuse to start %s, and the engine runs vLLM %s: %s", e.Block, e.Cfg.Env[i].Value, upstream.VLLMKVConnectorRefusesExpandable, why, e.VLLM, fix)
		return
	}
	f.warnf("%s.env PYTORCH_CUDA_ALLOC_CONF %q: vLLM %s and later refuse to start %s; the engine runs vLLM %s, which may already: remove expandable_segments:True", e.Block, e.Cfg.Env[i].Value, upstream.VLLMKVConnectorRefusesExpandable, why, e.VLLM)
}

// validateLMCacheImage refuses an engine whose LMCache connector cannot load
// in its image, and warns where the image may lack what it needs.
func validateLMCacheImage(f *Findings, e resolve.Engine) {
	ver, l := e.VLLM, resolve.EngineLMCache(e)
	stock := l.Has != nil && resolve.IsImageOf(resolve.ImageRepo(l.Image), upstream.VLLMImageRepo)
	switch {
	case e.V0Engine && ver.Version.AtLeast(upstream.VLLMLMCacheV0Gone):
		f.errorf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which vLLM %s removed, and the engine runs vLLM %s: remove vllmConfig.v1 to use LMCacheConnectorV1", e.Block, upstream.VLLMLMCacheV0Gone, ver)
	case e.V0Engine && stock:
		f.errorf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and the engine runs vLLM %s in vLLM's own image, which has none: it has no LMCache before %s and from %s the LMCache current when it was built, after LMCache renamed lmcache.experimental to lmcache.v1 (May 2025): remove vllmConfig.v1 to use LMCacheConnectorV1 with vllm/vllm-openai:v%s or later", e.Block, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst)
	case e.V0Engine:
		f.warnf("%s.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and LMCache renamed that to lmcache.v1 in May 2025: the engine (vLLM %s) crashes at start unless %s has an LMCache from before; remove vllmConfig.v1 to use LMCacheConnectorV1", e.Block, ver, l.Image)
	case stock && !*l.Has:
		f.errorf("%s.lmcacheConfig.enabled needs LMCache in the engine's image, and the engine runs vLLM %s in vLLM's own image, which has none (vLLM's images contain LMCache from %s): use vllm/vllm-openai:v%s or later, or an lmcache/vllm-openai image", e.Block, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMImageLMCacheFirst)
	case ver.Version.Less(upstream.VLLMLMCacheV1First):
		f.errorf("%s.lmcacheConfig.enabled needs vLLM %s or later (LMCacheConnectorV1), and the engine runs vLLM %s: use vllm/vllm-openai:v%s or later, whose images contain LMCache, or an lmcache/vllm-openai image of vLLM %s or later", e.Block, upstream.VLLMLMCacheV1First, ver, upstream.VLLMImageLMCacheFirst, upstream.VLLMLMCacheV1First)
	}
}

// validateLMCacheLockstep warns when kvaware engines run an LMCache other
// than the router's. The LMCache controller in the router and the workers in
// the engines exchange messages that change between LMCache releases; a
// worker the controller cannot read never registers, and every kvaware
// lookup misses without an error (production-stack PR #1060, which pins
// router and engine LMCache "in lockstep"). Every router that kvaware can
// use here (0.1.11 and later) runs LMCache 0.3.11, so the fix offered is
// the engines' image.
func validateLMCacheLockstep(f *Findings, s *resolve.Stack) {
	r := s.Router
	if r.RouterType != resolve.RoutingKVAware || r.VersionErr != nil {
		return
	}
	want, ok := upstream.RouterLMCacheOf(r.Version.Version)
	if !ok {
		return
	}
	w, _ := upstream.ParseVersion(want)
	for _, e := range s.Engines {
		if !e.KVAware || e.VLLMErr != nil {
			continue
		}
		l := resolve.EngineLMCache(e)
		if l.Has != nil && !*l.Has {
			continue // refused: no LMCache at all
		}
		got, _ := upstream.ParseVersion(l.Release)
		switch {
		case l.Release == "":
			f.warnf("%s.vllmConfig.image %s does not say which LMCache it runs, and router %s runs LMCache %s for kvaware: the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; pin the engines' LMCache with an lmcache/vllm-openai image whose tag names LMCache %s", e.Block, l.Image, r.Version, want, want)
		case got[0] != w[0] || got[1] != w[1]:
			f.warnf("%s.vllmConfig.image %s runs LMCache %s, and router %s runs LMCache %s for kvaware: an LMCache %d.%d controller rejects the registration of an LMCache %d.%d worker as an unknown message type (production-stack PR #1060), so kvaware misses silently; use an engine image with LMCache %s", e.Block, l.Image, l.Release, r.Version, want, w[0], w[1], got[0], got[1], want)
		case got != w:
			f.warnf("%s.vllmConfig.image %s runs LMCache %s, and router %s runs LMCache %s for kvaware: the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; use an engine image with LMCache %s", e.Block, l.Image, l.Release, r.Version, want, want)
		}
	}
}

// validateRouterVersion refuses a stack whose router arguments the router
// release would reject: it exits at start-up on a flag or routing logic it
// does not know.
func validateRouterVersion(f *Findings, s *resolve.Stack) {
	const p = "spec.routerConfig"
	r := s.Router
	if r.VersionErr != nil {
		f.errorf("%s: %s", p, r.VersionErr)
		return
	}
	if upstream.RouterNewest.Less(r.Version.Version) {
		f.warnf("%s: router %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, r.Version, upstream.RouterNewest, upstream.RouterNewest)
	}
	if since, ok := upstream.RoutingLogicSince[r.RouterType]; ok && r.Version.Version.Less(since) {
		f.errorf("%s.routerType %s needs router %s or later, and the router is %s: use a newer router image or another routerType", p, r.RouterType, since, r.Version)
		return
	}
	args := build.RouterArgs(s)
	reported := map[string]bool{}
	for _, a := range args[:len(args)-len(r.ExtraArgs)] {
		a, _, _ = strings.Cut(a, "=") // the flag of --flag=value
		k, ok := upstream.RouterFlagSince[a]
		if !ok || !r.Version.Version.Less(k.Since) || reported[k.Field] {
			continue
		}
		reported[k.Field] = true
		f.errorf("%s.%s needs router %s or later, the first to parse %s, and the router is %s: use a router image of %s or later", p, k.Field, k.Since, a, r.Version, k.Since)
	}
}

// validateSleepMode warns where the router cannot learn that an engine
// sleeps, so it keeps sending it requests: a router before 0.1.6, or a
// multi-node engine on Ray, whose command is a shell script.
func validateSleepMode(f *Findings, s *resolve.Stack) {
	if resolve.ExtensionOn(s) {
		return
	}
	for _, e := range s.Engines {
		if !e.SleepMode {
			continue
		}
		switch {
		case s.Router.Version.Version.Less(upstream.RouterReadsSleepModeSince):
			f.warnf("%s.vllmConfig.extraArgs %s: router %s does not read sleep mode from the engine's pod (router %s and later do) and keeps sending requests to a sleeping engine: use a router image of %s or later",
				e.Block, resolve.SleepModeFlag, s.Router.Version, upstream.RouterReadsSleepModeSince, upstream.RouterReadsSleepModeSince)
		case e.Ray:
			f.warnf("%s.vllmConfig.extraArgs %s: a multi-node engine on Ray runs vllm serve from a shell script, and the router reads sleep mode only from the command of the container named vllm, so it keeps sending requests to a sleeping engine",
				e.Block, resolve.SleepModeFlag)
		}
	}
}

// validateVLLMVersion refuses what the engine's vLLM release cannot do and
// warns about what it ignores.
func validateVLLMVersion(f *Findings, e resolve.Engine) {
	p := e.Block + ".vllmConfig"
	if e.VLLMErr != nil {
		f.errorf("%s: %s", p, e.VLLMErr)
		return
	}
	ver := e.VLLM
	if upstream.VLLMNewest.Less(ver.Version) {
		f.warnf("%s: vLLM %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, ver, upstream.VLLMNewest, upstream.VLLMNewest)
	}
	unreadVLLMEnv(f, e)
	if e.V0Engine && ver.Version.AtLeast(upstream.VLLMV0EngineGone) {
		f.errorf("%s.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM %s: vLLM %s removed the V0 engine; remove v1 or use an image of an older vLLM", p, ver, upstream.VLLMV0EngineGone)
		return
	}
	if v1 := e.Cfg.VLLMConfig.V1; v1 != nil && *v1 && ver.Version.AtLeast(upstream.VLLMUseV1Ignored) {
		f.warnf("%s.v1 has no effect: the engine runs vLLM %s, which only has the V1 engine and no longer reads VLLM_USE_V1; remove v1", p, ver)
	}
	chunkedPrefillIgnored(f, e)
	expandableSegmentsWithConnector(f, e)
	if !e.LMCache {
		return
	}
	validateLMCacheImage(f, e)
}
