package fn

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// stack is a ProductionStack resolved for building: names, namespace, and
// every model's engine with defaults applied.
type stack struct {
	name      string // S: the stack's name as a DNS label, at most 63 characters
	namespace string
	names     names
	engines   []engine
	router    router

	// routerRoleExists: Crossplane observed the router's Role, so its
	// RoleBinding may be composed.
	routerRoleExists bool

	serviceMonitor *v1alpha1.ServiceMonitor
	networkPolicy  *v1alpha1.NetworkPolicy
	cacheServer    *v1alpha1.LMCacheServer
}

func newStack(id stackIdentity, spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input) *stack {
	name := shorten(dnsLabel(id.name), maxLabelLength)
	st := &stack{
		name:      name,
		namespace: id.namespace,
		names:     names{stack: name},
		engines:   engines(spec, in),
		router:    resolveRouter(spec.RouterConfig, in),

		networkPolicy: spec.NetworkPolicy,
	}
	if spec.Monitoring != nil {
		st.serviceMonitor = spec.Monitoring.ServiceMonitor
	}
	if spec.LMCacheConfig != nil {
		st.cacheServer = spec.LMCacheConfig.Server
	}
	return st
}

// meta is the metadata of every object of the stack. The namespace is set
// explicitly: a legacy XR is cluster scoped, so Crossplane cannot infer it.
func (s *stack) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: labels}
}

// hfTokenSecret is the Hugging Face token of the stack's first engine that
// has one, for the router: kvaware routing downloads the models' tokenizers.
func (s *stack) hfTokenSecret() *v1alpha1.SecretKeySelector {
	for _, e := range s.engines {
		if t := e.cfg.VLLMConfig.HFTokenSecret; t != nil {
			return t
		}
	}
	return nil
}

// object is one desired composed resource and its composition resource name.
type object struct {
	key string
	obj runtime.Object
}

// compose builds every object of the stack: per model its engine Deployment,
// Service, model cache claim and chat template, then the router. The order is
// fixed; keys are stable for the life of the stack.
func compose(s *stack) []object {
	objs := make([]object, 0, 4*len(s.engines)+5)
	for _, e := range s.engines {
		objs = append(objs,
			object{engineKey(e.id), engineDeployment(s, e)},
			object{engineServiceKey(e.id), engineService(s, e)})
		if ownsClaim(e) {
			objs = append(objs, object{engineStorageKey(e.id), storageClaim(s, e)})
		}
		if e.model.ChatTemplate != "" {
			objs = append(objs, object{engineTemplateKey(e.id), chatTemplateConfigMap(s, e)})
		}
		if wantsPDB(e.cfg.PodDisruptionBudget) {
			objs = append(objs, object{enginePDBKey(e.id), enginePDB(s, e)})
		}
		if autoscaled(e) {
			objs = append(objs, engineAutoscaler(s, e))
		}
	}
	objs = append(objs,
		object{routerServiceAccountKey, routerServiceAccount(s)},
		object{routerRoleKey, routerRole(s)})
	if s.routerRoleExists {
		// The API server refuses a RoleBinding to a Role it cannot find
		// unless its creator may bind any Role, which Crossplane may not
		// (RBAC escalation prevention): Crossplane applies the composed
		// objects in no set order, so the binding waits for a reconcile
		// that observes the Role.
		objs = append(objs, object{routerRoleBindingKey, routerRoleBinding(s)})
	}
	objs = append(objs,
		object{routerKey, routerDeployment(s)},
		object{routerServiceKey, routerService(s)})
	if wantsPDB(s.router.pdb) {
		objs = append(objs, object{routerPDBKey, routerPDB(s)})
	}
	if routerAutoscaled(s) {
		objs = append(objs, object{routerAutoscalerKey, routerHPA(s)})
	}
	if in := s.router.ingress; on(in != nil, in.GetEnabled()) {
		objs = append(objs, object{routerIngressKey, routerIngress(s, in)})
	}
	if r := s.router.httpRoute; on(r != nil, r.GetEnabled()) {
		objs = append(objs, object{routerHTTPRouteKey, routerHTTPRoute(s, r)})
	}
	if m := s.serviceMonitor; on(m != nil, m.GetEnabled()) {
		objs = append(objs,
			object{engineMonitorKey, serviceMonitor(s, s.names.engineServiceMonitor(), componentEngine, servicePortName, m)},
			object{routerMonitorKey, serviceMonitor(s, s.names.routerServiceMonitor(), componentRouter, routerSvcPortName, m)})
	}
	if cacheServerOn(s) {
		objs = append(objs,
			object{cacheServerKey, cacheServerDeployment(s)},
			object{cacheServerServiceKey, cacheServerService(s)})
	}
	if np := s.networkPolicy; on(np != nil, np.GetEnabled()) {
		objs = append(objs, object{engineNetworkPolicyKey, engineNetworkPolicy(s, np)})
	}
	return objs
}
