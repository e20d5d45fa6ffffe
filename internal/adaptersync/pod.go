package adaptersync

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// PodPatcher sets annotations on the program's own pod.
type PodPatcher interface {
	PatchAnnotations(ctx context.Context, annotations map[string]string) error
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// InClusterPatcher patches the pod with a JSON merge patch through the API
// server, as the pod's ServiceAccount (it needs patch on pods in its
// namespace, nothing else). The token is read for every call: the kubelet
// rotates it.
type InClusterPatcher struct {
	Server, Namespace, Name string
	TokenFile               string
	Client                  *http.Client
}

// NewInClusterPatcher uses what every pod has: KUBERNETES_SERVICE_HOST and
// _PORT, the ServiceAccount's token and CA; the pod's name and namespace come
// from the downward API.
func NewInClusterPatcher(name, namespace string) (*InClusterPatcher, error) {
	return NewInClusterPatcherIn(serviceAccountDir, name, namespace)
}

// NewInClusterPatcherIn is NewInClusterPatcher with the ServiceAccount's
// token and CA (files token and ca.crt) read from dir rather than where the
// kubelet mounts them: the e2e tests run the patcher outside a pod.
func NewInClusterPatcherIn(dir, name, namespace string) (*InClusterPatcher, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset")
	}
	if name == "" || namespace == "" {
		return nil, errors.New("the pod's name and namespace are unknown: set POD_NAME and POD_NAMESPACE from the downward API (fieldRef metadata.name, metadata.namespace)")
	}
	ca, err := os.ReadFile(dir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no certificate in " + dir + "/ca.crt")
	}
	return &InClusterPatcher{
		Server:    "https://" + net.JoinHostPort(host, port),
		Namespace: namespace,
		Name:      name,
		TokenFile: dir + "/token",
		Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}},
	}, nil
}

// PatchAnnotations: PATCH /api/v1/namespaces/{ns}/pods/{name}.
func (p *InClusterPatcher) PatchAnnotations(ctx context.Context, annotations map[string]string) error {
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	u := p.Server + "/api/v1/namespaces/" + url.PathEscape(p.Namespace) + "/pods/" + url.PathEscape(p.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	if p.TokenFile != "" {
		tok, err := os.ReadFile(p.TokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(tok)))
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("patching pod %s/%s: %d %s", p.Namespace, p.Name, resp.StatusCode, clip(string(b)))
	}
	return nil
}
