package render_test

import (
	"testing"

	"github.com/vllm-project/function-vllm-stack/test/internal/kubecheck"
)

// doc is one object of a rendered YAML stream.
type doc struct {
	obj map[string]any // the document decoded
	kubecheck.Doc
}

func (d doc) kind() string             { return d.Kind() }
func (d doc) meta(field string) string { return d.Meta(field) }

// splitDocs splits a YAML stream into its non-empty documents.
func splitDocs(t *testing.T, b []byte) []doc {
	t.Helper()
	var docs []doc
	for _, d := range kubecheck.SplitDocs(t, b) {
		docs = append(docs, doc{obj: d.Obj, Doc: d})
	}
	return docs
}
