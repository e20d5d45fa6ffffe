package stack

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Stack is a ProductionStack resolved for building, and what its last
// Compose found of the stack's change in progress.
type Stack struct {
	r *resolvedStack
	// last is what the last Compose found (transition.go): the facade
	// keeps it for Parts, Moves, Notes and Withheld; the resolved stack
	// is never changed after New.
	last transitionResult
}

// resolvedStack is a ProductionStack resolved for building: names,
// namespace, and every model's engine with defaults applied.
type resolvedStack struct {
	name      string // S: the stack's name as a DNS label, at most 63 characters
	namespace string
	names     names
	engines   []engine
	router    router

	// extension is the inference extension's routing layer, nil when the
	// stack runs the production-stack router.
	extension *extension

	serviceMonitor *v1alpha1.ServiceMonitor
	// adapterSyncImage is the function's own image, from the Input, for
	// the adapter sync containers.
	adapterSyncImage string
	networkPolicy    *v1alpha1.NetworkPolicy
	cacheServer      *v1alpha1.LMCacheServer

	id   Identity
	spec *v1alpha1.ProductionStackSpec
}

// Validate checks the stack: its decoded spec and resolved engines, and the
// XRD's rules on raw, the spec as written (DecodeSpec returns it). Errors
// name the field and the fix; a stack with errors must not be composed.
func (s *Stack) Validate(raw map[string]any) Findings {
	f := validate(s.r.id, s.r.spec, s.r)
	f.addSchemaViolations(raw)
	return f
}

// Models is how many models the stack serves.
func (s *Stack) Models() int { return len(s.r.engines) }

// Compose builds every object of a valid stack, in a fixed order with keys
// (composition resource names) stable for the life of the stack, or explains
// objects that would clash. observed is what Crossplane observed of the
// composed objects: the router's RoleBinding waits for its Role, and a
// model whose topology changes keeps its old workload, as observed, until
// the new one is ready (Moves; see transition.go).
func (s *Stack) Compose(observed Observed) ([]Object, error) {
	r := s.r
	s.last = transitionResult{}
	var rootHolder, note string
	if extensionOn(r) {
		rootHolder, note = resolveRootHolder(r, observed)
	}
	groups := composeGroups(r, observed, rootHolder)
	if err := clashes(r, groups); err != nil {
		return nil, err
	}
	objs := slices.Concat(groups...)
	handOver(r, observed, objs)
	s.last = transit(r, observed, objs)
	s.last.rootHolder = rootHolder
	if note != "" {
		s.last.notes = []string{note}
	}
	return s.last.objects, nil
}

// Withheld are the keys the last Compose withheld until an observed object
// is gone (keys.go).
func (s *Stack) Withheld() []string { return s.last.withheld }

// Notes are warnings of the last Compose: what changes for clients that
// the spec alone does not say (a removed model that held the gateway's
// root path).
func (s *Stack) Notes() []string { return s.last.notes }

// Moves are the models whose change of topology is in progress, as the last
// Compose saw them.
func (s *Stack) Moves() []Move { return s.last.moves }

// New resolves a decoded spec for building: the stack's names, and every
// model's engine with the spec's and the Input's defaults applied. It
// refuses nothing: Validate says what is wrong.
func New(id Identity, spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input) *Stack {
	return &Stack{r: resolveStack(id, spec, in)}
}

// resolveStack is the stack's names, and every model's engine with the
// spec's and the Input's defaults applied.
func resolveStack(id Identity, spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input) *resolvedStack {
	name := shorten(dnsLabel(id.Name), maxLabelLength)
	n := names{stack: name}
	st := &resolvedStack{
		name:      name,
		namespace: id.Namespace,
		names:     n,
		engines:   engines(spec, in, n),
		router:    resolveRouter(spec.RouterConfig, in),

		networkPolicy:    spec.NetworkPolicy,
		adapterSyncImage: in.GetAdapterSync().Image,
		extension:        resolveExtension(spec.InferenceExtension),

		id:   id,
		spec: spec,
	}
	if _, _, ok := disaggregatedLabels(st); ok && !routerTypeChosen(spec.RouterConfig) {
		// The router's logic for a disaggregated model's transfer; another
		// routerType is refused (validateDisaggregation).
		for _, e := range st.engines {
			if e.role != "" {
				st.router.routerType = routingFor(transferOf(e))
				break
			}
		}
	}
	if st.extension != nil {
		for i := range st.engines {
			st.engines[i].picked = st.engines[i].role != ""
		}
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
func (s *resolvedStack) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: labels}
}

// hfTokenSecret is the Hugging Face token of the stack's first engine that
// has one, for the router: kvaware routing downloads the models' tokenizers.
func (s *resolvedStack) hfTokenSecret() *v1alpha1.SecretKeySelector {
	for _, e := range s.engines {
		if t := e.cfg.VLLMConfig.HFTokenSecret; t != nil {
			return t
		}
	}
	return nil
}

// An Object is one desired composed resource and its composition resource name.
type Object struct {
	Key string
	Obj runtime.Object
}

// composeGroups builds the objects of each model, in the order of
// s.engines, then the stack's own.
func composeGroups(s *resolvedStack, o Observed, rootHolder string) [][]Object {
	groups := make([][]Object, 0, len(s.engines)+1)
	for _, e := range s.engines {
		objs := make([]Object, 0, 6)
		if _, ok := multiNode(e); ok {
			objs = append(objs, Object{engineLWSKey(e.id), engineLeaderWorkerSet(s, e)})
		} else {
			objs = append(objs, Object{engineKey(e.id), engineDeployment(s, e)})
		}
		objs = append(objs, Object{engineServiceKey(e.id), engineService(s, e)})
		if ownsClaimKey(e) {
			objs = append(objs, Object{engineStorageKey(claimEngine(e).id), storageClaim(s, e)})
		}
		if e.model.ChatTemplate != "" {
			objs = append(objs, Object{engineTemplateKey(e.id), chatTemplateConfigMap(s, e)})
		}
		if runtimeAdaptersOn(e) {
			objs = append(objs, Object{engineAdaptersKey(e.id), adaptersConfigMap(s, e)})
		}
		if wantsPDB(e.cfg.PodDisruptionBudget) {
			objs = append(objs, Object{enginePDBKey(e.id), enginePDB(s, e)})
		}
		if autoscaled(e) {
			objs = append(objs, engineAutoscaler(s, e))
		}
		if m, ok := poolModel(e); ok && extensionOn(s) {
			objs = append(objs, poolObjects(s, m, o)...)
			objs = append(objs, Object{modelRouteKey(m.id), modelRoute(s, m, rootHolder)})
		}
		groups = append(groups, objs)
	}
	return append(groups, stackObjects(s, o))
}

// stackObjects builds the objects the models share: the router's, the cache
// server's, the monitors and the network policy.
func stackObjects(s *resolvedStack, o Observed) []Object {
	objs := make([]Object, 0, 8)
	if !extensionOn(s) {
		objs = append(objs, routerObjects(s, o)...)
	}
	if m := s.serviceMonitor; on(m != nil, m.GetEnabled()) {
		objs = append(objs, Object{engineMonitorKey, serviceMonitor(s, s.names.engineServiceMonitor(), ComponentEngine, servicePortName, m)})
		if !extensionOn(s) {
			objs = append(objs, Object{routerMonitorKey, serviceMonitor(s, s.names.routerServiceMonitor(), ComponentRouter, routerSvcPortName, m)})
		} else {
			objs = append(objs, Object{pickerMonitorKey, pickerServiceMonitor(s, m)})
		}
	}
	if dashboardOn(s) {
		objs = append(objs, Object{dashboardKey, dashboardConfigMap(s)})
	}
	if alertsOn(s) {
		objs = append(objs, Object{prometheusRuleKey, prometheusRule(s)})
	}
	if cacheServerOn(s) {
		objs = append(objs,
			Object{cacheServerKey, cacheServerDeployment(s)},
			Object{cacheServerServiceKey, cacheServerService(s)})
	}
	if np := s.networkPolicy; on(np != nil, np.GetEnabled()) {
		objs = append(objs, Object{engineNetworkPolicyKey, engineNetworkPolicy(s, np)})
	}
	return append(objs, adapterSyncObjects(s, o)...)
}

// routerObjects are the production-stack router's objects.
func routerObjects(s *resolvedStack, o Observed) []Object {
	var objs []Object
	if s.router.serviceAccount == "" {
		objs = append(objs, Object{routerServiceAccountKey, routerServiceAccount(s)})
	}
	objs = append(objs, Object{routerRoleKey, routerRole(s)})
	if o.Has(routerRoleKey) {
		// The API server refuses a RoleBinding to a Role it cannot find
		// unless its creator may bind any Role, which Crossplane may not
		// (RBAC escalation prevention): Crossplane applies the composed
		// objects in no set order, so the binding waits for a reconcile
		// that observes the Role.
		objs = append(objs, Object{routerRoleBindingKey, routerRoleBinding(s)})
	}
	objs = append(objs,
		Object{routerKey, routerDeployment(s)},
		Object{routerServiceKey, routerService(s)})
	if wantsPDB(s.router.pdb) {
		objs = append(objs, Object{routerPDBKey, routerPDB(s)})
	}
	if routerAutoscaled(s) {
		objs = append(objs, Object{routerAutoscalerKey, routerHPA(s)})
	}
	if in := s.router.ingress; on(in != nil, in.GetEnabled()) {
		objs = append(objs, Object{routerIngressKey, routerIngress(s, in)})
	}
	if r := s.router.httpRoute; on(r != nil, r.GetEnabled()) {
		objs = append(objs, Object{routerHTTPRouteKey, routerHTTPRoute(s, r)})
	}
	return objs
}

// clashes explains objects that would share a composition resource name, or
// a kind and a name: model names whose object names collide although their
// DNS labels differ ("a" and "a-service" both make engine-a-service), or a
// model named like one of the router's objects. Crossplane would compose
// only one of them, or apply both to the same object.
func clashes(s *resolvedStack, groups [][]Object) error {
	var msgs []string
	byKey := map[string]int{}
	byName := map[string]int{}
	for g, objs := range groups {
		for _, o := range objs {
			if prev, dup := byKey[o.Key]; dup {
				msgs = append(msgs, clash(s, prev, g, "composition resource name "+o.Key))
			} else {
				byKey[o.Key] = g
			}
			kind := o.Obj.GetObjectKind().GroupVersionKind().Kind
			id := kind + "/" + objectNameOf(o.Obj)
			if prev, dup := byName[id]; dup {
				msgs = append(msgs, clash(s, prev, g, kind+" name "+objectNameOf(o.Obj)))
			} else {
				byName[id] = g
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New("invalid ProductionStack: " + strings.Join(msgs, "; "))
}

// clash explains objects of groups a and b (models by index in s.engines;
// the last group is the stack's own objects, of which only the router's
// names can meet a model's) that clash on what.
func clash(s *resolvedStack, a, b int, what string) string {
	from := func(g int) string {
		if g >= len(s.engines) {
			return "the router"
		}
		e := s.engines[g]
		return fmt.Sprintf("%s.name %q", e.path, e.model.Name)
	}
	return fmt.Sprintf("%s and %s both make the %s: rename the model", from(b), from(a), what)
}

func objectNameOf(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}
