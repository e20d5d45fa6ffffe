package build

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

func crd(s *resolve.Stack, apiVersion, kind, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(s.Namespace)
	u.SetLabels(labels)
	return u
}

func withAnnotations(m metav1.ObjectMeta, a map[string]string) metav1.ObjectMeta {
	m.Annotations = a
	return m
}

// An Object is one desired composed resource and its composition resource name.
type Object struct {
	Key string
	Obj runtime.Object
}

func objectNameOf(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

// Observed is what Crossplane observed of a stack's composed objects, by
// composition resource name: whether one exists, whether it is ready (as the
// status judges it), and the object itself.
type Observed interface {
	Has(key string) bool
	Ready(key string) bool
	// Object is the observed object as the cluster returned it; nil when
	// it is not observed. Its maps are not changed.
	Object(key string) map[string]any
}

// Keys is an Observed that knows only which objects exist: none is ready,
// none is readable, so no change of topology is seen in progress.
type Keys func(key string) bool

func (k Keys) Has(key string) bool { return k(key) }

func (Keys) Ready(string) bool { return false }

func (Keys) Object(string) map[string]any { return nil }
