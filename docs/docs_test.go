// Package docs_test keeps the documentation honest: the API reference is
// generated from the Go types and the XRD and must be current, and every
// relative link of the README and docs/ resolves.
package docs_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/apiref"
	"github.com/vllm-project/function-vllm-stack/stack/observability"
)

var update = flag.Bool("update", false, "rewrite docs/api.md and the generated part of docs/operations.md")

// TestAPIReference: docs/api.md is what internal/apiref makes of the XRD.
func TestAPIReference(t *testing.T) {
	def, err := os.ReadFile("../xrd/definition.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typeDocs, err := apiref.TypeDocs("../xrd/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := apiref.Generate(def, typeDocs)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("api.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/api.md is not what the XRD says: run go test ./docs -run TestAPIReference -update (after make generate when the Go types changed)")
	}
}

// TestRelativeLinks: every relative link of README.md and docs/*.md names a
// file of the repository, and a #fragment names a heading of that file.
func TestRelativeLinks(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: no file %s", f, target, file)
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(file, ".md") && !anchors(t, file)[fragment] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", f, target, file, fragment)
			}
		}
	}
}

// stripCode drops fenced blocks and code spans, where ](x) is not a link.
func stripCode(s string) string {
	return regexp.MustCompile("(?s)```.*?```|`[^`\n]*`").ReplaceAllString(s, "")
}

// anchors are the fragments GitHub gives a file's headings: lower case,
// punctuation but '-' and '_' dropped, spaces made '-', repeats numbered.
func anchors(t *testing.T, file string) map[string]bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		a := anchor(strings.TrimLeft(line, "#"))
		if n := count[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out
}

func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && !isPunct(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPunct(r rune) bool { return strings.ContainsRune("–—’‘“”…→←·", r) }

// The markers of the generated observability reference in operations.md.
const (
	observabilityBegin = "<!-- BEGIN observability reference: generated from stack/observability by go test ./docs -run TestObservabilityReference -update. DO NOT EDIT. -->\n"
	observabilityEnd   = "<!-- END observability reference -->\n"
)

// TestObservabilityReference: docs/operations.md lists every panel and
// alert, its query and releases, as stack/observability describes them.
func TestObservabilityReference(t *testing.T) {
	b, err := os.ReadFile("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, observabilityBegin), strings.Index(doc, observabilityEnd)
	if i < 0 || j < i {
		t.Fatal("docs/operations.md lacks the observability reference's markers")
	}
	want := doc[:i+len(observabilityBegin)] + observability.Reference() + doc[j:]
	if *update {
		if err := os.WriteFile("operations.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Error("docs/operations.md's observability reference is not what stack/observability describes: run go test ./docs -run TestObservabilityReference -update")
	}
}
