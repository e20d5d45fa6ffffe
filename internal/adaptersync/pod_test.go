package adaptersync

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// TestNewInClusterPatcherIn: the constructor reads the token and CA from
// the directory it is given, the API server from KUBERNETES_SERVICE_HOST and
// _PORT; NewInClusterPatcher reads them where the kubelet mounts them.
func TestNewInClusterPatcherIn(t *testing.T) {
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())
	dir := t.TempDir()
	if _, err := NewInClusterPatcherIn(dir, "engine-0", "ns"); err == nil {
		t.Error("no ca.crt: got no error")
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewInClusterPatcherIn(dir, "engine-0", "ns")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.PatchAnnotations(context.Background(), map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer tok-2" {
		t.Errorf("Authorization %q, want the token of %s", auth, dir)
	}
	if p.Server != srv.URL || p.TokenFile != filepath.Join(dir, "token") {
		t.Errorf("server %q token %q", p.Server, p.TokenFile)
	}

	// The default: the kubelet's mount.
	if _, err := os.Stat(serviceAccountDir + "/ca.crt"); err == nil {
		t.Skip("this machine has " + serviceAccountDir)
	}
	if _, err := NewInClusterPatcher("engine-0", "ns"); err == nil || !strings.Contains(err.Error(), serviceAccountDir+"/ca.crt") {
		t.Errorf("NewInClusterPatcher without %s: got %v", serviceAccountDir, err)
	}
}
