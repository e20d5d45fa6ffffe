package xrd_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestEveryFieldInREADME: every field of the ProductionStack spec is named in
// the code of the hand-written documentation (README.md and docs/, less the
// generated api.md), so none ships without saying what it becomes. Fields of
// Kubernetes' own types (affinity, tolerations, ...) are documented by
// Kubernetes and not walked.
func TestEveryFieldInREADME(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, p := range append(pages, "../README.md") {
		if filepath.Base(p) == "api.md" {
			continue
		}
		page, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, page...)
	}
	// Words of the README's code spans and blocks: `a.b{c, d}` names a, b,
	// c and d.
	words := map[string]bool{}
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")
	for _, span := range code.FindAllString(string(b), -1) {
		for _, w := range regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`).FindAllString(span, -1) {
			words[w] = true
		}
	}
	fields := map[string]string{} // json name -> a path where it is declared
	apiFields(reflect.TypeFor[v1alpha1.ProductionStackSpec](), "spec", fields)
	if len(fields) < 100 {
		t.Fatalf("found %d fields in the API; did the walk stop early?", len(fields))
	}
	var missing []string
	for name, path := range fields {
		if !words[name] {
			missing = append(missing, path)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("%s is not named in the code of README.md or docs/ (docs/configuration.md says what each field becomes): document it", p)
	}
}

// apiFields collects the JSON names of the fields of t and of the API's own
// types below it.
func apiFields(t reflect.Type, path string, out map[string]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[v1alpha1.ProductionStack]().PkgPath() {
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" { // inline
			apiFields(f.Type, path, out)
			continue
		}
		p := path + "." + name
		if _, seen := out[name]; !seen {
			out[name] = p
		}
		apiFields(f.Type, p, out)
	}
}
