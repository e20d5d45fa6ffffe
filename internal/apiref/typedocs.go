package apiref

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"strings"
)

// TypeDocs reads the doc comments of the types declared in the Go package in
// dir (xrd/v1alpha1), without the kubebuilder markers.
func TypeDocs(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pkgs {
		files := make([]*ast.File, 0, len(p.Files))
		for _, f := range p.Files {
			files = append(files, f)
		}
		d, err := doc.NewFromFiles(fset, files, "xrd/v1alpha1")
		if err != nil {
			return nil, err
		}
		for _, t := range d.Types {
			out[t.Name] = withoutMarkers(t.Doc)
		}
	}
	return out, nil
}

// withoutMarkers drops the +kubebuilder (and other +) marker lines.
func withoutMarkers(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "+") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
