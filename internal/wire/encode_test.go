package wire_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/internal/wire/wiretest"
)

// encoderKinds are the kinds the function composes, as the random tests fill
// them.
var encoderKinds = []func() runtime.Object{
	func() runtime.Object { return &appsv1.Deployment{} },
	func() runtime.Object { return &corev1.Service{} },
	func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
	func() runtime.Object { return &corev1.ConfigMap{} },
	func() runtime.Object { return &corev1.ServiceAccount{} },
	func() runtime.Object { return &rbacv1.Role{} },
	func() runtime.Object { return &rbacv1.RoleBinding{} },
	func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
	func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
	func() runtime.Object { return &networkingv1.Ingress{} },
	func() runtime.Object { return &networkingv1.NetworkPolicy{} },
}

// TestEncoderRandomObjects: objects of every composed kind filled at random
// (every field set or not, zero values, invalid UTF-8, empty and nil maps
// and slices, quantities, times, int-or-strings), and unstructured objects.
func TestEncoderRandomObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		o := encoderKinds[i%len(encoderKinds)]()
		fill(rng, reflect.ValueOf(o).Elem(), 0)
		wiretest.SameAsJSON(t, reflect.TypeOf(o).String(), o)
		if t.Failed() {
			return
		}
	}
	// Keys that read the same once invalid UTF-8 is replaced: the JSON
	// path keeps the last in sorted order.
	wiretest.SameAsJSON(t, "colliding keys", &corev1.ConfigMap{Data: map[string]string{"a\xff": "1", "a\xfe": "2", "a\uFFFD": "3"}})
	for range 500 {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		for range rng.IntN(6) {
			u.Object[randString(rng)] = randJSONValue(rng, 0)
		}
		wiretest.SameAsJSON(t, "unstructured", u)
	}
}

// FuzzEncoder: any JSON decoded into each composed kind, then encoded both
// ways.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte(`{"metadata": {"name": "a", "labels": {"x": ""}, "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"replicas": 0, "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1.5"}}, "ports": [{"containerPort": 0}]}], "volumes": [{"name": "v", "emptyDir": {}}]}}}}`), uint8(0))
	f.Add([]byte(`{"spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8080}], "selector": {}}}`), uint8(1))
	f.Add([]byte(`{"spec": {"minAvailable": "50%", "selector": {"matchLabels": {}}}}`), uint8(7))
	f.Add([]byte(`{"data": {"a": "\u00ff", "b": ""}, "binaryData": {"c": "AAEC"}}`), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		o := encoderKinds[int(kind)%len(encoderKinds)]()
		if json.Unmarshal(data, o) != nil {
			return
		}
		wiretest.SameAsJSON(t, reflect.TypeOf(o).String(), o)
	})
}

// fill sets v at random, depth-bounded.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	if depth > 12 || rng.IntN(4) == 0 {
		return // leave it zero
	}
	switch v.Type() {
	case reflect.TypeFor[resource.Quantity]():
		v.Set(reflect.ValueOf(resource.MustParse([]string{"0", "1", "1.5", "100m", "1Gi", "2e3", "-1"}[rng.IntN(7)])))
		return
	case reflect.TypeFor[metav1.Time]():
		v.Set(reflect.ValueOf(metav1.Unix(rng.Int64N(1<<31), 0)))
		return
	case reflect.TypeFor[intstr.IntOrString]():
		if rng.IntN(2) == 0 {
			v.Set(reflect.ValueOf(intstr.FromInt32(rng.Int32N(70000) - 10)))
		} else {
			v.Set(reflect.ValueOf(intstr.FromString(randString(rng))))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		n := rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			fill(rng, k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString(randString(rng))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if x := []int64{0, 1, -1, 80, 1 << 40, -(1 << 62)}[rng.IntN(6)]; !v.OverflowInt(x) {
			v.SetInt(x)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(300)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 0.5, -1e-7, 1e21, 3}[rng.IntN(5)])
	}
}

func randString(rng *rand.Rand) string {
	return []string{"", "a", "nvidia.com/gpu", "héllo ✓", "bad\xffutf8\xc3", "<&>", "tab\tnew\nline", `q"uote\`}[rng.IntN(8)]
}

func randJSONValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case depth > 4 || k == 0:
		return nil
	case k == 1:
		return randString(rng)
	case k == 2:
		return rng.IntN(2) == 0
	case k == 3:
		return int64(rng.IntN(1000)) - 500
	case k == 4:
		return rng.Float64() * 1e6
	case k == 5:
		l := make([]any, rng.IntN(3))
		for i := range l {
			l[i] = randJSONValue(rng, depth+1)
		}
		return l
	default:
		m := map[string]any{}
		for range rng.IntN(3) {
			m[randString(rng)] = randJSONValue(rng, depth+1)
		}
		if rng.IntN(3) == 0 {
			m["emptyDir"] = map[string]any{}
		}
		return m
	}
}
