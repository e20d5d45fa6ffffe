package fn

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// What the function knows of `vllm serve` by release: every spelling or
// switch that changed between the releases it supports. Each row is a fact
// of the upstream facts file (vllm-flags.tsv, FACTS.md §2-3), kept as test
// data in testdata/upstream for the contract test. Flags and variables not
// listed here are the same in every supported release.
var (
	// The releases the function renders for: the seed stack's 0.8.3 up to
	// 0.27.1 (out by 2026-08-13), the newest release whose code is readable: main
	// of 2026-08-17 (017e9f4448) holds every main commit 0.27.1 was cut
	// from. 0.28.0 (2026-08-26) was cut from later commits no copy here
	// holds (testdata/upstream/vllm-flags.tsv, "0.23.0 to 0.27.1").
	vllmOldest = v(0, 8, 3)
	vllmNewest = v(0, 27, 1)

	// --no-enable-chunked-prefill exists from 0.8.5 (BooleanOptionalAction).
	// Before, --enable-chunked-prefill was a StoreBoolean: it takes "=false"
	// and has no --no- form; from 0.8.5 "=false" is rejected.
	vllmNoChunkedPrefill = v(0, 8, 5)

	// LMCache connectors of --kv-transfer-config: LMCacheConnectorV1 (V1
	// engine) from 0.8.5; LMCacheConnector (V0 engine) up to 0.10.0, not
	// registered from 0.10.1.
	vllmLMCacheV1First = v(0, 8, 5)
	vllmLMCacheV0Gone  = v(0, 10, 1)

	// VLLM_USE_V1: "0" selects the V0 engine up to 0.10.2; 0.11.0 removed
	// the V0 engine (the server asserts VLLM_USE_V1, so "0" crashes) and
	// from 0.11.1 the variable is no longer read.
	vllmV0EngineGone = v(0, 11, 0)
	vllmUseV1Ignored = v(0, 11, 1)

	// vLLM's own images (vllm/vllm-openai) contain LMCache from 0.9.2: the
	// release build passes INSTALL_KV_CONNECTORS=true, which installs
	// requirements/kv_connectors.txt (PR #18193). Images 0.8.3-0.9.1 have no
	// LMCache, and both LMCache connectors import it when they load. The
	// LMCache is not pinned (`lmcache`; `lmcache >= 0.3.9` from 0.15.0): it is
	// whatever was current when the image was built, so the tag does not say
	// which.
	vllmImageLMCacheFirst = v(0, 9, 2)

	// The V1 engine turns chunked prefill on whatever --no-enable-chunked-
	// prefill says (_set_default_args_v1, every release to 0.11.x); 0.12.0 is
	// the first release sure to honour it (PR #28665, 2025-11-14; 0.11.1 was
	// cut around then).
	vllmV1ChunkedPrefillOff = v(0, 12, 0)
)

const (
	vllmImageRepo = "vllm/vllm-openai"
	// kvTransferV1 and kvTransferV0 connect vLLM's KV cache to LMCache in
	// the V1 and the V0 engine.
	kvTransferV1 = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
	kvTransferV0 = `{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}`
)

// resolveVLLMVersion finds the vLLM release an engine runs: the tag of a
// vllm/vllm-openai image when it is a release number; otherwise (latest, a
// digest, another image) vllmConfig.engineVersion, then the Input's
// engine.version, then the newest supported. The error explains a version
// that cannot be used; the version returned is then the newest.
func resolveVLLMVersion(vc *v1alpha1.VLLMConfig, in *v1beta1.Input) (programVersion, error) {
	image := imageRef(vc.ImagePullRegistry, vc.Image)
	repo, tag := imageTag(image)
	fromTag, tagged := version{}, false
	if repo == vllmImageRepo || strings.HasSuffix(repo, "/"+vllmImageRepo) {
		fromTag, tagged = parseVersion(tag)
	}
	declared, from := vc.EngineVersion, "vllmConfig.engineVersion"
	if declared == "" && !tagged && in.GetEngine().Version != "" {
		declared, from = in.GetEngine().Version, "the Composition's Input engine.version"
	}
	newest := programVersion{vllmNewest, "the newest known, as vllmConfig.image names no release"}
	var d version
	if declared != "" {
		var ok bool
		if d, ok = parseVersion(declared); !ok {
			return newest, fmt.Errorf("%s %q is not a vLLM release: use a release number such as 0.9.2", from, declared)
		}
	}
	switch {
	case tagged && declared != "" && d != fromTag:
		return newest, fmt.Errorf("vllmConfig.engineVersion %s contradicts vllmConfig.image %s, which runs vLLM %s: remove engineVersion or make the two agree", declared, image, fromTag)
	case tagged:
		return checkSupported(programVersion{fromTag, "vllmConfig.image " + image})
	case declared != "":
		return checkSupported(programVersion{d, from + " " + declared})
	}
	return newest, nil
}

// checkSupported refuses a vLLM older than the oldest supported release.
func checkSupported(p programVersion) (programVersion, error) {
	if p.version.less(vllmOldest) {
		return p, fmt.Errorf("vLLM %s is older than %s, the oldest release this function renders arguments for: use an image of vLLM %s or later", p, vllmOldest, vllmOldest)
	}
	return p, nil
}

// chunkedPrefillArg spells chunked prefill on or off the way the engine's
// vLLM parses it; nil leaves vLLM's default.
func chunkedPrefillArg(e engine) []string {
	b := e.cfg.VLLMConfig.EnableChunkedPrefill
	switch {
	case b == nil:
		return nil
	case *b:
		return []string{"--enable-chunked-prefill"}
	case e.vllm.version.less(vllmNoChunkedPrefill):
		return []string{"--enable-chunked-prefill=false"}
	}
	return []string{"--no-enable-chunked-prefill"}
}

// usesV0Engine reports whether the stack asks for vLLM's V0 engine.
func usesV0Engine(e engine) bool {
	v1 := e.cfg.VLLMConfig.V1
	return v1 != nil && !*v1
}

// kvTransferConfig is the LMCache connector of the engine's engine (V0 or V1).
func kvTransferConfig(e engine) string {
	if usesV0Engine(e) {
		return kvTransferV0
	}
	return kvTransferV1
}

// useV1Env is VLLM_USE_V1 where the engine's vLLM reads it; from 0.11.1 it
// does not, and validation warns that vllmConfig.v1 has no effect.
func useV1Env(e engine) []corev1.EnvVar {
	v1 := e.cfg.VLLMConfig.V1
	if v1 == nil || e.vllm.version.atLeast(vllmUseV1Ignored) {
		return nil
	}
	return []corev1.EnvVar{{Name: "VLLM_USE_V1", Value: boolDigit(*v1)}}
}

// validateVLLMVersion refuses what the engine's vLLM release cannot do and
// warns about what it ignores.
func validateVLLMVersion(f *findings, e engine) {
	p := e.block + ".vllmConfig"
	if e.vllmErr != nil {
		f.errorf("%s: %s", p, e.vllmErr)
		return
	}
	ver := e.vllm
	if vllmNewest.less(ver.version) {
		f.warnf("%s: vLLM %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, ver, vllmNewest, vllmNewest)
	}
	unreadVLLMEnv(f, e)
	if usesV0Engine(e) && ver.version.atLeast(vllmV0EngineGone) {
		f.errorf("%s.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM %s: vLLM %s removed the V0 engine; remove v1 or use an image of an older vLLM", p, ver, vllmV0EngineGone)
		return
	}
	if v1 := e.cfg.VLLMConfig.V1; v1 != nil && *v1 && ver.version.atLeast(vllmUseV1Ignored) {
		f.warnf("%s.v1 has no effect: the engine runs vLLM %s, which only has the V1 engine and no longer reads VLLM_USE_V1; remove v1", p, ver)
	}
	chunkedPrefillIgnored(f, e)
	if !lmcacheOn(e) {
		return
	}
	validateLMCacheImage(f, e)
}
