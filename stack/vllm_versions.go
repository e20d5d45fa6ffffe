package stack

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// resolveVLLMVersion finds the vLLM release an engine runs: the tag of a
// vllm/vllm-openai image when it is a release number; otherwise (latest, a
// digest, another image) vllmConfig.engineVersion, then the Input's
// engine.version, then the newest supported. The error explains a version
// that cannot be used; the version returned is then the newest.
func resolveVLLMVersion(vc *v1alpha1.VLLMConfig, in *v1beta1.Input) (programVersion, error) {
	image := imageRef(vc.ImagePullRegistry, vc.Image)
	repo, tag := upstream.ImageTag(image)
	fromTag, tagged := upstream.Version{}, false
	if isImageOf(repo, upstream.VLLMImageRepo) {
		fromTag, tagged = upstream.ParseVersion(tag)
	}
	declared, from := vc.EngineVersion, "vllmConfig.engineVersion"
	if declared == "" && !tagged && in.GetEngine().Version != "" {
		declared, from = in.GetEngine().Version, "the Composition's Input engine.version"
	}
	newest := programVersion{upstream.VLLMNewest, "the newest known, as vllmConfig.image names no release"}
	var d upstream.Version
	if declared != "" {
		var ok bool
		if d, ok = upstream.ParseVersion(declared); !ok {
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
	if p.version.Less(upstream.VLLMOldest) {
		return p, fmt.Errorf("vLLM %s is older than %s, the oldest release this function renders arguments for: use an image of vLLM %s or later", p, upstream.VLLMOldest, upstream.VLLMOldest)
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
	case e.vllm.version.Less(upstream.VLLMNoChunkedPrefill):
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
		return upstream.KVTransferV0
	}
	return upstream.KVTransferV1
}

// useV1Env is VLLM_USE_V1 where the engine's vLLM reads it; from 0.11.1 it
// does not, and validation warns that vllmConfig.v1 has no effect.
func useV1Env(e engine) []corev1.EnvVar {
	v1 := e.cfg.VLLMConfig.V1
	if v1 == nil || e.vllm.version.AtLeast(upstream.VLLMUseV1Ignored) {
		return nil
	}
	return []corev1.EnvVar{{Name: "VLLM_USE_V1", Value: boolDigit(*v1)}}
}

// validateVLLMVersion refuses what the engine's vLLM release cannot do and
// warns about what it ignores.
func validateVLLMVersion(f *Findings, e engine) {
	p := e.block + ".vllmConfig"
	if e.vllmErr != nil {
		f.errorf("%s: %s", p, e.vllmErr)
		return
	}
	ver := e.vllm
	if upstream.VLLMNewest.Less(ver.version) {
		f.warnf("%s: vLLM %s is newer than %s, the newest release this function knows: its arguments are rendered as for %s", p, ver, upstream.VLLMNewest, upstream.VLLMNewest)
	}
	unreadVLLMEnv(f, e)
	if usesV0Engine(e) && ver.version.AtLeast(upstream.VLLMV0EngineGone) {
		f.errorf("%s.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM %s: vLLM %s removed the V0 engine; remove v1 or use an image of an older vLLM", p, ver, upstream.VLLMV0EngineGone)
		return
	}
	if v1 := e.cfg.VLLMConfig.V1; v1 != nil && *v1 && ver.version.AtLeast(upstream.VLLMUseV1Ignored) {
		f.warnf("%s.v1 has no effect: the engine runs vLLM %s, which only has the V1 engine and no longer reads VLLM_USE_V1; remove v1", p, ver)
	}
	chunkedPrefillIgnored(f, e)
	expandableSegmentsWithConnector(f, e)
	if !lmcacheOn(e) {
		return
	}
	validateLMCacheImage(f, e)
}
