package adaptersync

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInClusterPatcher: a JSON merge patch of the pod's annotations, as
// its ServiceAccount, with the token read afresh.
func TestInClusterPatcher(t *testing.T) {
	var got struct{ method, path, ctype, auth, body string }
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.ctype, got.auth, got.body = r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b)
		if r.URL.Path != "/api/v1/namespaces/ns/pods/engine-0" {
			w.WriteHeader(403)
			io.WriteString(w, `{"kind":"Status","reason":"Forbidden"}`)
		}
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("tok-1\n"), 0o600)
	p := &InClusterPatcher{Server: srv.URL, Namespace: "ns", Name: "engine-0", TokenFile: tok, Client: srv.Client()}
	if err := p.PatchAnnotations(context.Background(), map[string]string{AnnotationModified: "2026-08-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if got.method != http.MethodPatch || got.ctype != "application/merge-patch+json" || got.auth != "Bearer tok-1" ||
		got.body != `{"metadata":{"annotations":{"lora-modified":"2026-08-01T00:00:00Z"}}}` {
		t.Errorf("%+v", got)
	}
	p.Name = "other"
	if err := p.PatchAnnotations(context.Background(), map[string]string{"a": "b"}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("err %v", err)
	}
}
