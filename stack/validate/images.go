package validate

import (
	"regexp"
	"strings"

	"github.com/distribution/reference"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// Every image field (engines, LoRA sidecar, init containers, router, cache
// server, endpoint picker, routing sidecar, and the Composition's Input) is
// checked here, by the grammar the kubelet parses an image with
// (k8s.io/kubernetes pkg/util/parsers.ParseImageName calls
// github.com/distribution/reference.ParseNormalizedNamed): a lower-case
// repository path, an optional registry host[:port], a tag or a digest.
// The API server takes any string without surrounding whitespace; a pod
// with an upper-case repository is created and never pulls.

// imageExample ends every refusal of an image reference.
const imageExample = "use a lower-case repository with an optional registry host[:port] and a tag or a digest, such as docker.io/vllm/vllm-openai:v0.9.2"

// image checks an image reference, "" meaning the default.
func image(f *Findings, field, v string) {
	if v == "" || surroundingSpace(f, field, v, "an image reference") {
		return
	}
	named, err := reference.ParseNormalizedNamed(v)
	if err != nil {
		f.errorf("%s %s is not an image reference the kubelet can pull (%s): %s", field, resolve.ClipQuote(v), err, imageExample)
		return
	}
	// The grammar reads a first component with upper-case letters as a
	// registry host (splitDockerDomain in normalize.go): "LMCache/x" is
	// pulled from a host named LMCache, not from Docker Hub's lmcache.
	if d := reference.Domain(named); d != strings.ToLower(d) && !strings.ContainsAny(d, ".:") {
		f.errorf("%s %s is not an image reference the kubelet can pull (its first component %s has upper-case letters, so it is read as a registry host): %s", field, resolve.ClipQuote(v), resolve.ClipQuote(d), imageExample)
	}
}

// imageRegistry checks a registry prepended to image references that name
// none (ImageRef): a host[:port], optionally with a lower-case path.
func imageRegistry(f *Findings, field, v string) {
	if v == "" || surroundingSpace(f, field, v, "a registry") {
		return
	}
	host, _, _ := strings.Cut(strings.TrimSuffix(v, "/"), "/")
	if _, err := reference.ParseNormalizedNamed(strings.TrimSuffix(v, "/") + "/image"); err != nil || !reference.DomainRegexp.MatchString(host) {
		f.errorf("%s %s is not an image registry: use a registry host with an optional port and a lower-case path, such as docker.io or registry.example.com:5000/mirror", field, resolve.ClipQuote(v))
	}
}

// surroundingSpace refuses a value with leading or trailing whitespace, as
// the API server refuses such an image, and reports whether it did.
func surroundingSpace(f *Findings, field, v, what string) bool {
	if v == strings.TrimSpace(v) {
		return false
	}
	f.errorf("%s %s is invalid: %s has no leading or trailing whitespace", field, resolve.ClipQuote(v), what)
	return true
}

// anchoredTag is the grammar of an image tag.
var anchoredTag = regexp.MustCompile(`^` + reference.TagRegexp.String() + `$`)

// imageTag checks an image tag given apart from its repository.
func imageTag(f *Findings, field, v string) {
	if v != "" && !anchoredTag.MatchString(v) {
		f.errorf("%s %s is not an image tag: use at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-', such as v0.1.12", field, resolve.ClipQuote(v))
	}
}
