package render_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// doc is one object of a rendered YAML stream.
type doc struct {
	json []byte         // the document as JSON
	obj  map[string]any // and decoded
}

func (d doc) apiVersion() string { s, _ := d.obj["apiVersion"].(string); return s }
func (d doc) kind() string       { s, _ := d.obj["kind"].(string); return s }

func (d doc) meta(field string) string {
	m, _ := d.obj["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// splitDocs splits a YAML stream into its non-empty documents.
func splitDocs(t tb, b []byte) []doc {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []doc
	for {
		y, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read YAML stream: %v", err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("YAML to JSON: %v\n%s", err, y)
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		d := doc{json: j}
		if err := json.Unmarshal(j, &d.obj); err != nil {
			t.Fatalf("decode %s: %v", j, err)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		t.Fatalf("no YAML documents")
	}
	return docs
}
