package resolve

import (
	"strings"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

const (
	LMCacheImage = "lmcache/vllm-openai"
)

// ImageRef joins registry and image unless image already names a registry
// host: its first path element has a '.' or ':' or is localhost, the rule
// container runtimes use.
func ImageRef(registry, image string) string {
	if registry == "" {
		return image
	}
	if first, _, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return image
	}
	return strings.TrimSuffix(registry, "/") + "/" + image
}

// IsImageOf reports whether repository repo is of the image family (its
// last path elements), whatever registry it is pulled from.
func IsImageOf(repo, family string) bool {
	return repo == family || strings.HasSuffix(repo, "/"+family)
}

// ImageRepo is an image reference without its tag or digest.
func ImageRepo(image string) string {
	repo, _ := upstream.ImageTag(image)
	return repo
}

// programVersion is the version of the program a container runs, and where
// the function learnt it, for messages.
type programVersion struct {
	Version upstream.Version
	from    string // e.g. "vllmConfig.image vllm/vllm-openai:v0.8.3"
}

func (p programVersion) String() string {
	return p.Version.String() + " (" + p.from + ")"
}
