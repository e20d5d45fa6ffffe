package resolve

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Releases of the NIXL path: NixlConnector is registered from vLLM 0.9.0,
// but the vllm/vllm-openai image has NIXL only from 0.10.2; from 0.11.1 the
// side channel is one listener per data parallel rank instead of one per
// tensor parallel rank.
var (
	NIXLSince = upstream.V(0, 10, 2)
)

var (
	NIXLOneListenerSince = upstream.V(0, 11, 1)
)

const (
	// LMCacheTransferRepository is the image family whose build date tells its
	// LMCache.
	LMCacheTransferRepository = LMCacheImage
)

// The build dates of lmcache/vllm-openai images whose LMCache has the
// mid-2025 NIXL backend: from the chart's tutorial image (2025-05-27-v1),
// the oldest known to carry it, to the day before LMCache#1579 was merged.
const (
	LMCacheTransferFirstDate = "2025-05-27"
	LMCacheTransferLastDate  = "2025-09-11"
)

// imageBuildDate is the date an lmcache/vllm-openai tag starts with
// (2025-05-27-v1), if it does.
var imageBuildDate = regexp.MustCompile(`^(20[0-9]{2}-[01][0-9]-[0-3][0-9])(?:$|[-_.])`)

// LMCacheTransferImageDate is the build date of the engine's image, if it
// is an lmcache/vllm-openai image tagged with one.
func LMCacheTransferImageDate(e Engine) (image, date string, ok bool) {
	v := e.Cfg.VLLMConfig
	image = ImageRef(v.ImagePullRegistry, v.Image)
	date, ok = imageBuiltOn(image)
	return image, date, ok
}

func imageBuiltOn(image string) (date string, ok bool) {
	repo, tag := upstream.ImageTag(image)
	m := imageBuildDate.FindStringSubmatch(tag)
	if !IsImageOf(repo, LMCacheTransferRepository) || m == nil {
		return "", false
	}
	return m[1], true
}

// LMCacheTransferImage reports whether an engine image carries what
// disaggregation's transfer lmcache needs: an lmcache/vllm-openai image
// built while LMCache had its mid-2025 NIXL backend.
func LMCacheTransferImage(image string) bool {
	date, ok := imageBuiltOn(image)
	return ok && LMCacheTransferFirstDate <= date && date <= LMCacheTransferLastDate
}

// resolveSidecar: the image llm-d published with the picker's release
// unless the stack names one; the release its tag names, else the
// picker's.
func resolveSidecar(x *v1alpha1.InferenceExtension, picker upstream.PickerRelease) sidecar {
	sc := x.RoutingSidecar
	if sc == nil {
		sc = &v1alpha1.RoutingSidecar{}
	}
	v := picker.Version
	if picker.Kind != upstream.PickerLLMD {
		v = upstream.DefaultPicker.Version
	}
	out := sidecar{Image: Or(sc.Image, upstream.SidecarImageOf(v)), PullPolicy: corev1.PullPolicy(sc.ImagePullPolicy)}
	repo, tag := upstream.ImageTag(out.Image)
	if !upstream.IsSidecarImage(repo) {
		out.Err = fmt.Errorf("routingSidecar.image %s is not llm-d's routing sidecar (%s, or %s before v0.9.0): the function spells the sidecar's flags by release, so it must know which program runs; use one of them, or your mirror of one under the same repository name", out.Image, upstream.LLMDSidecarImage, upstream.LLMDSidecarImageOld)
		return out
	}
	if t, ok := upstream.ParseVersion(tag); ok {
		out.Release, out.From = t, "routingSidecar.image "+out.Image
	} else {
		out.Release, out.From = picker.Version, fmt.Sprintf("the picker's release, routingSidecar.image %s naming none", out.Image)
	}
	if out.Release.Less(upstream.PickerPDSince) {
		out.Err = fmt.Errorf("routingSidecar.image %s runs the sidecar of llm-d %s (%s), older than %s, the first whose flags the function renders (--kv-connector): use %s or later", out.Image, out.Release, out.From, upstream.PickerPDSince, upstream.PickerPDSince)
	}
	return out
}

// DefaultPickerImage is the endpoint picker a stack runs unless it names one.
var DefaultPickerImage = upstream.LLMDPickerImage + ":v" + upstream.DefaultPicker.Version.String()

// resolveExtension applies the defaults of an enabled inferenceExtension
// block; nil when the stack runs the router.
func resolveExtension(x *v1alpha1.InferenceExtension) *extension {
	if x == nil || !ptr.Deref(x.Enabled, true) {
		return nil
	}
	p := x.Picker
	if p == nil {
		p = &v1alpha1.EndpointPicker{}
	}
	e := &extension{Spec: x, Image: Or(p.Image, DefaultPickerImage), Replicas: ptr.Deref(p.Replicas, 1), Weights: inferencepool.DefaultWeights}
	e.Release, e.From, e.ReleaseErr = resolvePickerRelease(e.Image, p.Version)
	e.Sidecar = resolveSidecar(x, e.Release)
	if w := p.Scorers; w != nil {
		e.Weights.Queue = ptr.Deref(w.Queue, e.Weights.Queue)
		e.Weights.KVCacheUtilization = ptr.Deref(w.KVCacheUtilization, e.Weights.KVCacheUtilization)
		e.Weights.PrefixCache = ptr.Deref(w.PrefixCache, e.Weights.PrefixCache)
	}
	return e
}

// resolvePickerRelease is the picker's release: its image's tag when the
// image is one of the two pickers' and its tag a release, else
// picker.version with the kind the image names.
func resolvePickerRelease(image, declared string) (upstream.PickerRelease, string, error) {
	repo, tag := upstream.ImageTag(image)
	kind := upstream.PickerKindOf(repo)
	if kind == "" {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.image %s is neither llm-d's endpoint picker (%s) nor the inference extension's (%s): the function spells the picker's flags and configuration by release, so it must know which program runs; use one of the two, or your mirror of one under the same repository name", image, upstream.LLMDPickerImage, upstream.GAIEPickerImage)
	}
	if t, ok := upstream.ParseVersion(tag); ok {
		if d, ok := upstream.ParseVersion(declared); declared != "" && (!ok || d != t) {
			return upstream.DefaultPicker, "", fmt.Errorf("picker.version %s contradicts picker.image %s, which runs %s %s: remove picker.version or make the two agree", declared, image, kind, t)
		}
		return checkPickerSupported(upstream.PickerRelease{Kind: kind, Version: t}, "picker.image "+image)
	}
	if declared == "" {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.image %s names no release (tag %q): set picker.version to the release it runs, such as %s", image, tag, upstream.PickerNewest[kind])
	}
	d, ok := upstream.ParseVersion(declared)
	if !ok {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.version %q is not a release: use a release number such as %s", declared, upstream.PickerNewest[kind])
	}
	return checkPickerSupported(upstream.PickerRelease{Kind: kind, Version: d}, "picker.version "+declared)
}

func checkPickerSupported(r upstream.PickerRelease, from string) (upstream.PickerRelease, string, error) {
	if oldest := upstream.PickerOldest[r.Kind]; r.Version.Less(oldest) {
		why := "the oldest release whose flags and configuration the function renders"
		if r.Kind == upstream.PickerGAIE {
			why = "the first that starts without the InferenceObjective CRD (earlier releases watch InferenceObjectives whether or not their CRD is served, and the stack installs no CRD)"
		}
		return r, from, fmt.Errorf("%s runs %s, older than %s %s, %s: use %s %s or later", from, r, r.Kind, oldest, why, r.Kind, oldest)
	}
	return r, from, nil
}

// lmcacheInImage says what the engine's image tells of its LMCache: whether
// it has one (yes, no, or unknown for an image of another family) and, if
// its tag says, which release.
type lmcacheInImage struct {
	Image   string
	Has     *bool
	Release string // "" when the image does not say
}

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
	if p.Version.Less(upstream.RouterOldest) {
		return p, fmt.Errorf("router %s is older than %s, the oldest release this function renders arguments for", p, upstream.RouterOldest)
	}
	return p, nil
}

// resolveVLLMVersion finds the vLLM release an engine runs: the tag of a
// vllm/vllm-openai image when it is a release number; otherwise (latest, a
// digest, another image) vllmConfig.engineVersion, then the Input's
// engine.version, then the newest supported. The error explains a version
// that cannot be used; the version returned is then the newest.
func resolveVLLMVersion(vc *v1alpha1.VLLMConfig, in *v1beta1.Input) (programVersion, error) {
	image := ImageRef(vc.ImagePullRegistry, vc.Image)
	repo, tag := upstream.ImageTag(image)
	fromTag, tagged := upstream.Version{}, false
	if IsImageOf(repo, upstream.VLLMImageRepo) {
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
	if p.Version.Less(upstream.VLLMOldest) {
		return p, fmt.Errorf("vLLM %s is older than %s, the oldest release this function renders arguments for: use an image of vLLM %s or later", p, upstream.VLLMOldest, upstream.VLLMOldest)
	}
	return p, nil
}
