package xp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// LeaderWorkerSet (kubernetes-sigs/lws) as its release installs it: the
// manager in lws-system, with its own certificates (internal cert
// management: it writes a CA into the two webhook configurations) and two
// webhooks the API server must reach: the LeaderWorkerSet defaulting and
// validation, and the pod webhook that labels a group's pods and gives
// their containers LWS_LEADER_ADDRESS, LWS_WORKER_INDEX and LWS_GROUP_SIZE.
// The webhooks are called at the URL of the name the manager's certificate
// is for, <service>.<namespace>.svc, which the hosts file makes 127.0.0.1,
// where the manager's webhook server listens: a Service reference would be
// dialed at its cluster IP, which nothing routes here.
const (
	LWSNamespace      = "lws-system"
	lwsWebhookService = "lws-webhook-service"
)

// lwsWebhooks are the two webhook configurations of LWS v0.7.0
// (config/webhook/manifests.yaml with its patches and the default
// kustomization's "lws-" prefix and namespace), whose names are those the
// manager's cert rotator fills (pkg/cert), its namespace and the empty
// Secret the rotator writes the certificates into (config/internalcert).
const lwsWebhooks = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: lws-mutating-webhook-configuration
webhooks:
- name: mleaderworkerset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://%[1]s.%[2]s.svc:%[3]d/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset
  failurePolicy: Fail
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]
  sideEffects: None
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://%[1]s.%[2]s.svc:%[3]d/mutate--v1-pod
  failurePolicy: Fail
  objectSelector: {matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: lws-validating-webhook-configuration
webhooks:
- name: vleaderworkerset.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://%[1]s.%[2]s.svc:%[3]d/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset
  failurePolicy: Fail
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]
  sideEffects: None
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://%[1]s.%[2]s.svc:%[3]d/validate--v1-pod
  failurePolicy: Fail
  objectSelector: {matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
  sideEffects: None
---
apiVersion: v1
kind: Namespace
metadata:
  name: %[2]s
---
apiVersion: v1
kind: Secret
metadata:
  name: lws-webhook-server-cert
  namespace: %[2]s
`

// StartLWS installs LeaderWorkerSet's CRD (the YAML file crd of the pinned
// module) and webhook configurations, and runs its manager (binary) with
// the admin's identity, on 127.0.0.1, until the webhook configurations
// carry its CA and its webhook server answers. Stop ends it.
func (c *Crossplane) StartLWS(ctx context.Context, binary, crd string) error {
	b, err := os.ReadFile(crd)
	if err != nil {
		return err
	}
	if err := c.admin.ApplyYAML(ctx, b); err != nil {
		return fmt.Errorf("cannot install the LeaderWorkerSet CRD: %w", err)
	}
	// The webhook server's port: a free one (its default, 9443, is the
	// function's).
	ports, err := proc.FreePorts(3)
	if err != nil {
		return err
	}
	webhookPort := ports[2]
	if err := c.admin.ApplyYAML(ctx, fmt.Appendf(nil, lwsWebhooks, lwsWebhookService, LWSNamespace, webhookPort)); err != nil {
		return fmt.Errorf("cannot install LeaderWorkerSet's webhooks: %w", err)
	}
	host := lwsWebhookService + "." + LWSNamespace + ".svc"
	if err := c.addHosts(host); err != nil {
		return err
	}
	dir := filepath.Join(c.dir, "lws")
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
		return err
	}
	c.ports = append(c.ports, ports...)
	config := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "127.0.0.1:%d"}
webhook: {host: 127.0.0.1, port: %d, certDir: %s}
internalCertManagement: {enable: true, webhookServiceName: %s, webhookSecretName: lws-webhook-server-cert}
`, ports[0], ports[1], webhookPort, filepath.Join(dir, "certs"), lwsWebhookService)
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		return err
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig(c.o.Admin), 0o600); err != nil {
		return err
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + kc, "POD_NAMESPACE=" + LWSNamespace}
	p, err := c.procs.start(dir, "lws-manager", binary, []string{"--config=" + cfgFile, "--zap-log-level=info"}, env)
	if err != nil {
		return err
	}
	healthz := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/readyz"
	webhooks := []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	}
	return poll(ctx, 250*time.Millisecond, c.o.StartTimeout, "LeaderWorkerSet's manager ready, its CA in the webhook configurations", func(ctx context.Context) (bool, string, error) {
		if gone, msg := p.Exited(); gone {
			return false, "", fmt.Errorf("lws-manager: %s", msg)
		}
		for i, gvr := range webhooks {
			name := []string{"lws-mutating-webhook-configuration", "lws-validating-webhook-configuration"}[i]
			u, err := c.admin.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				if ca, _, _ := unstructured.NestedString(hm, "clientConfig", "caBundle"); ca == "" {
					return false, name + " has no caBundle yet", nil
				}
			}
		}
		// The rotator writes the certificates into its Secret and waits
		// until they appear in the certificate directory, where a pod
		// mounts that Secret: the kubelet's part, done here.
		sec, err := c.admin.Core.Secrets(LWSNamespace).Get(ctx, "lws-webhook-server-cert", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
			if len(sec.Data[k]) == 0 {
				return false, "lws-webhook-server-cert has no " + k + " yet", nil
			}
			if err := os.WriteFile(filepath.Join(dir, "certs", k), sec.Data[k], 0o600); err != nil {
				return false, "", err
			}
		}
		if err := httpGet(ctx, healthz, nil); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}
