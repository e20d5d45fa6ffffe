package xp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// FieldManager is the field manager of everything the harness applies.
const FieldManager = "vllm-stack-e2e"

// A Kube applies manifests server-side as one identity.
type Kube struct {
	Config  *rest.Config
	Dynamic dynamic.Interface
	Core    corev1client.CoreV1Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewKube returns clients for cfg.
func NewKube(cfg *rest.Config) (*Kube, error) {
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Kube{Config: cfg, Dynamic: d, Core: core, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// Resource returns the client of u's kind (in u's namespace).
func (k *Kube) Resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := k.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind installed since the mapper last read discovery.
		k.Mapper.Reset()
		if m, err = k.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("no API resource for %s: %w", gvk, err)
		}
	}
	if m.Scope.Name() == "namespace" {
		return k.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return k.Dynamic.Resource(m.Resource), nil
}

// Apply server-side applies every object with force, strictly validated.
func (k *Kube) Apply(ctx context.Context, objs ...*unstructured.Unstructured) error {
	for _, u := range objs {
		ri, err := k.Resource(u)
		if err != nil {
			return err
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			return err
		}
		got, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{
			FieldManager: FieldManager, Force: ptr.To(true), FieldValidation: "Strict",
		})
		if err != nil {
			return fmt.Errorf("cannot apply %s %s: %w", u.GetKind(), nsName(u), err)
		}
		u.Object = got.Object
	}
	return nil
}

// ApplyYAML applies every object of a YAML stream.
func (k *Kube) ApplyYAML(ctx context.Context, b []byte) error {
	objs, err := Decode(b)
	if err != nil {
		return err
	}
	return k.Apply(ctx, objs...)
}

func nsName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// serviceAccountToken returns a token of ns/name from the TokenRequest API.
func serviceAccountToken(ctx context.Context, core corev1client.CoreV1Interface, ns, name string, ttl time.Duration) (string, error) {
	tr, err := core.ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// kubeconfig is a kubeconfig file for cfg (host, CA data and bearer token).
func kubeconfig(cfg *rest.Config) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: user
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: user}
current-context: e2e
`, cfg.Host, base64.StdEncoding.EncodeToString(cfg.CAData), cfg.BearerToken)
}

// poll calls check every interval until it returns true or an error, or the
// timeout ends; the error then names what was last seen.
func poll(ctx context.Context, interval, timeout time.Duration, what string, check func(ctx context.Context) (bool, string, error)) error {
	last := ""
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := check(ctx)
		last = seen
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last seen: %s)", what, err, last)
	}
	return nil
}

// InstallCRD applies the CRDs of a YAML file and waits until each is
// Established.
func (k *Kube) InstallCRD(ctx context.Context, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	objs, err := Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := k.Apply(ctx, objs...); err != nil {
		return err
	}
	crds := k.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, o := range objs {
		err := poll(ctx, 250*time.Millisecond, time.Minute, "CRD "+o.GetName()+" Established", func(ctx context.Context) (bool, string, error) {
			u, err := crds.Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return Condition(u, "Established") == "True", Conditions(u), nil
		})
		if err != nil {
			return err
		}
	}
	k.Mapper.Reset()
	return nil
}
