// Package upstream is what function-vllm-stack knows of the programs it
// runs, by release: vLLM's `vllm serve`, the production-stack router and
// LMCache: release numbers and image tags, the releases where a flag, a
// spelling or a behaviour changed, and the environment variables each vLLM
// release reads. Each value cites the upstream fact it comes from
// (../stack/testdata/upstream holds them as test data, with citations). It
// knows nothing of stacks: the builders ask it.
package upstream

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a release number of vLLM, the router or LMCache: 0.8.3,
// 0.10.1.1.
type Version [4]int

// V makes a Version from its parts.
func V(parts ...int) Version {
	var out Version
	copy(out[:], parts)
	return out
}

// releaseNumber matches a release as image tags and users write it: an
// optional "v", three or four numbers, then anything that is not a further
// number: "v0.8.3", "0.9.2", "v0.10.1.1", "v0.9.2-cu128", "0.1.13.dev3-gabc",
// "v0.11.1rc1".
var releaseNumber = regexp.MustCompile(`^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?((?:\.\D|[^.\d]).*)?$`)

// preRelease marks a build made before the release it is numbered after:
// 0.1.13.dev3 or 0.11.1rc1 is not yet 0.1.13 or 0.11.1.
var preRelease = regexp.MustCompile(`^\.?(dev|rc|a|b|alpha|beta)\d*`)

// ParseVersion reads a release number. A pre-release counts as the release
// before it (its patch number less one): it has at least what that release
// has, and maybe not yet what its own release adds.
func ParseVersion(s string) (Version, bool) {
	m := releaseNumber.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	var out Version
	for i, p := range m[1:5] {
		if p != "" {
			out[i], _ = strconv.Atoi(p)
		}
	}
	if preRelease.MatchString(m[5]) && out[3] == 0 && out[2] > 0 {
		out[2]--
	}
	return out, true
}

// Less reports whether x is an earlier release than y.
func (x Version) Less(y Version) bool {
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// AtLeast reports whether x is y or later.
func (x Version) AtLeast(y Version) bool { return !x.Less(y) }

func (x Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", x[0], x[1], x[2])
	if x[3] != 0 {
		s += "." + strconv.Itoa(x[3])
	}
	return s
}

// ImageTag splits an image reference into its repository (without a
// registry host) and tag: "docker.io/vllm/vllm-openai:v0.8.3@sha256:…" is
// ("vllm/vllm-openai", "v0.8.3"). An image pinned by digest alone has no tag.
func ImageTag(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	if first, rest, ok := strings.Cut(image, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		image = rest
	}
	if i := strings.LastIndex(image, ":"); i >= 0 {
		return image[:i], image[i+1:]
	}
	return image, ""
}
