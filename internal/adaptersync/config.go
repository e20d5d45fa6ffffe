// Package adaptersync is the LoRA adapter sync program: it runs beside a vLLM
// engine, reads the adapters a stack wants from a mounted file, downloads
// what is missing into the LoRA directory on the model cache, loads and
// unloads adapters through the engine's runtime LoRA endpoints on localhost,
// and tells the production-stack router by bumping its own pod's
// lora-modified annotation. The function's binary runs it as
// `function adapter-sync` (main.go), so the image is the one the user already
// has. Facts it relies on: stack/testdata/upstream/lora-runtime.md.
package adaptersync

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/vllm-project/function-vllm-stack/internal/text"
)

// Adapter is one desired adapter, as the mounted file lists it.
type Adapter struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
}

// Source is where an adapter's files come from: exactly one of the two.
type Source struct {
	HuggingFace *HuggingFace `json:"huggingFace,omitempty"`
	// Path is a directory on the model cache holding the adapter's files;
	// the engine loads it in place.
	Path string `json:"path,omitempty"`
}

// HuggingFace is a repository on the hub at a revision (default "main").
type HuggingFace struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision,omitempty"`
}

const (
	maxConfigBytes = 1 << 20
	maxAdapters    = 1024
	maxNameLen     = 253
)

// ReadConfig reads the desired adapters. A file that cannot be read or
// parsed is an error (the caller keeps what is loaded); an adapter that is
// wrong on its own is kept with its reason, so the others still sync.
func ReadConfig(file string) ([]Adapter, map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxConfigBytes {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes", file, maxConfigBytes)
	}
	return ParseConfig(b)
}

// ParseConfig parses a JSON list of adapters; see ReadConfig.
func ParseConfig(b []byte) ([]Adapter, map[string]string, error) {
	var list []Adapter
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, nil, fmt.Errorf("adapters: %w", err)
	}
	if dec.More() {
		return nil, nil, errors.New("adapters: trailing data after the list")
	}
	if len(list) > maxAdapters {
		return nil, nil, fmt.Errorf("adapters: %d adapters, at most %d", len(list), maxAdapters)
	}
	invalid := map[string]string{}
	seen := map[string]bool{}
	var ok []Adapter
	for i, a := range list {
		if err := checkName(a.Name); err != nil {
			invalid[fmt.Sprintf("[%d]", i)] = clip(err.Error())
			continue
		}
		if seen[a.Name] {
			invalid[a.Name] = "listed more than once"
			ok = removeAdapter(ok, a.Name)
			continue
		}
		seen[a.Name] = true
		if err := checkSource(a.Source); err != nil {
			invalid[a.Name] = clip(err.Error())
			continue
		}
		if a.Source.HuggingFace != nil && a.Source.HuggingFace.Revision == "" {
			a.Source.HuggingFace.Revision = "main"
		}
		if a.Source.Path != "" {
			a.Source.Path = path.Clean(a.Source.Path)
		}
		ok = append(ok, a)
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i].Name < ok[j].Name })
	return ok, invalid, nil
}

func removeAdapter(list []Adapter, name string) []Adapter {
	out := list[:0]
	for _, a := range list {
		if a.Name != name {
			out = append(out, a)
		}
	}
	return out
}

// checkName: the name is the model name clients send and the directory the
// adapter is downloaded to, so it is one plain path segment.
func checkName(n string) error {
	switch {
	case n == "":
		return errors.New("name is empty")
	case len(n) > maxNameLen:
		return fmt.Errorf("name is longer than %d characters", maxNameLen)
	case strings.HasPrefix(n, "."):
		return fmt.Errorf("name %q starts with '.'", clip(n))
	case strings.ContainsAny(n, "/\\\x00"):
		return fmt.Errorf("name %q has '/', '\\' or NUL", clip(n))
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q has a control character", clip(n))
		}
	}
	return nil
}

func checkSource(s Source) error {
	switch {
	case s.HuggingFace != nil && s.Path != "":
		return errors.New("source has both huggingFace and path; give one")
	case s.HuggingFace == nil && s.Path == "":
		return errors.New("source has neither huggingFace nor path")
	case s.Path != "":
		if !path.IsAbs(s.Path) {
			return fmt.Errorf("source.path %q is not absolute", clip(s.Path))
		}
		for _, seg := range strings.Split(s.Path, "/") {
			if seg == ".." {
				return fmt.Errorf("source.path %q has '..'", clip(s.Path))
			}
		}
		if strings.ContainsRune(s.Path, 0) {
			return errors.New("source.path has NUL")
		}
		return nil
	}
	hf := s.HuggingFace
	parts := strings.Split(hf.Repo, "/")
	if hf.Repo == "" || len(parts) > 2 {
		return fmt.Errorf("source.huggingFace.repo %q is not <owner>/<name> or <name>", clip(hf.Repo))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || !hubNameOK(p) {
			return fmt.Errorf("source.huggingFace.repo %q is not <owner>/<name> or <name>", clip(hf.Repo))
		}
	}
	if len(hf.Revision) > 255 || strings.Contains(hf.Revision, "..") || strings.ContainsAny(hf.Revision, "\x00\\ ") {
		return fmt.Errorf("source.huggingFace.revision %q is not a branch, tag or commit", clip(hf.Revision))
	}
	return nil
}

// hubNameOK: the hub's repository names are letters, digits, '-', '_', '.'.
func hubNameOK(s string) bool {
	if len(s) > 96 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// maxReason bounds every message the program writes to the pod.
const maxReason = 300

func clip(s string) string { return text.Clip(s, maxReason) }
