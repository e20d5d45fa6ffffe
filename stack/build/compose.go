package build

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// ComposeGroups builds the objects of each model, in the order of
// s.engines, then the stack's own.
func ComposeGroups(s *resolve.Stack, o Observed, rootHolder string) [][]Object {
	groups := make([][]Object, 0, len(s.Engines)+1)
	for _, e := range s.Engines {
		objs := make([]Object, 0, 6)
		if ok := e.MultiNode; ok {
			objs = append(objs, Object{names.EngineLWSKey(e.ID), engineLeaderWorkerSet(s, e)})
		} else {
			objs = append(objs, Object{names.EngineKey(e.ID), engineDeployment(s, e)})
		}
		objs = append(objs, Object{names.EngineServiceKey(e.ID), engineService(s, e)})
		if resolve.OwnsClaimKey(e) {
			objs = append(objs, Object{names.EngineStorageKey(resolve.ClaimEngine(e).ID), storageClaim(s, e)})
		}
		if e.KVOffloadFS == resolve.KVOffloadNewClaim {
			objs = append(objs, Object{names.EngineKVOffloadKey(e.ID), kvOffloadClaim(s, e)})
		}
		if key, job, ok := FillJob(s, e); ok {
			objs = append(objs, Object{key, job})
		}
		if e.Model.ChatTemplate != "" {
			objs = append(objs, Object{names.EngineTemplateKey(e.ID), chatTemplateConfigMap(s, e)})
		}
		if e.RuntimeAdapters {
			objs = append(objs, Object{names.EngineAdaptersKey(e.ID), adaptersConfigMap(s, e)})
		}
		if resolve.WantsPDB(e.Cfg.PodDisruptionBudget) {
			objs = append(objs, Object{names.EnginePDBKey(e.ID), enginePDB(s, e)})
		}
		if e.Autoscaled {
			objs = append(objs, engineAutoscaler(s, e))
		}
		if m, ok := resolve.PoolModel(e); ok && resolve.ExtensionOn(s) {
			objs = append(objs, poolObjects(s, m, o)...)
			if e.Version == "" {
				// A canary's pool is a backend of its model's route.
				objs = append(objs, Object{names.ModelRouteKey(m.ID), ModelRoute(s, m, rootHolder, resolve.CanaryOn(e))})
			}
		}
		groups = append(groups, objs)
	}
	return append(groups, stackObjects(s, o))
}

// stackObjects builds the objects the models share: the router's, the cache
// server's, the monitors and the network policy.
func stackObjects(s *resolve.Stack, o Observed) []Object {
	objs := make([]Object, 0, 8)
	if !resolve.ExtensionOn(s) {
		objs = append(objs, routerObjects(s, o)...)
	}
	if m := s.ServiceMonitor; resolve.On(m != nil, m.GetEnabled()) {
		objs = append(objs, Object{names.EngineMonitorKey, serviceMonitor(s, s.Names.EngineServiceMonitor(), names.ComponentEngine, names.ServicePortName, m)})
		if !resolve.ExtensionOn(s) {
			objs = append(objs, Object{names.RouterMonitorKey, serviceMonitor(s, s.Names.RouterServiceMonitor(), names.ComponentRouter, names.RouterSvcPortName, m)})
		} else {
			objs = append(objs, Object{names.PickerMonitorKey, pickerServiceMonitor(s, m)})
		}
	}
	if resolve.DashboardOn(s) {
		objs = append(objs, Object{names.DashboardKey, dashboardConfigMap(s)})
	}
	if resolve.AlertsOn(s) {
		objs = append(objs, Object{names.PrometheusRuleKey, prometheusRule(s)})
	}
	if resolve.CacheServerOn(s) {
		objs = append(objs,
			Object{names.CacheServerKey, cacheServerDeployment(s)},
			Object{names.CacheServerServiceKey, cacheServerService(s)})
	}
	if np := s.NetworkPolicy; resolve.On(np != nil, np.GetEnabled()) {
		objs = append(objs, Object{names.EngineNetworkPolicyKey, engineNetworkPolicy(s, np)})
	}
	return append(objs, adapterSyncObjects(s, o)...)
}

// routerObjects are the production-stack router's objects.
func routerObjects(s *resolve.Stack, o Observed) []Object {
	var objs []Object
	if s.Router.ServiceAccount == "" {
		objs = append(objs, Object{names.RouterServiceAccountKey, routerServiceAccount(s)})
	}
	objs = append(objs, Object{names.RouterRoleKey, routerRole(s)})
	if o.Has(names.RouterRoleKey) {
		// The API server refuses a RoleBinding to a Role it cannot find
		// unless its creator may bind any Role, which Crossplane may not
		// (RBAC escalation prevention): Crossplane applies the composed
		// objects in no set order, so the binding waits for a reconcile
		// that observes the Role.
		objs = append(objs, Object{names.RouterRoleBindingKey, routerRoleBinding(s)})
	}
	objs = append(objs,
		Object{names.RouterKey, RouterDeployment(s)},
		Object{names.RouterServiceKey, routerService(s)})
	if resolve.WantsPDB(s.Router.PDB) {
		objs = append(objs, Object{names.RouterPDBKey, routerPDB(s)})
	}
	if resolve.RouterAutoscaled(s) {
		objs = append(objs, Object{names.RouterAutoscalerKey, routerHPA(s)})
	}
	if in := s.Router.Ingress; resolve.On(in != nil, in.GetEnabled()) {
		objs = append(objs, Object{names.RouterIngressKey, routerIngress(s, in)})
	}
	if r := s.Router.HttpRoute; resolve.On(r != nil, r.GetEnabled()) {
		objs = append(objs, Object{names.RouterHTTPRouteKey, routerHTTPRoute(s, r)})
	}
	return objs
}

// Clashes explains objects that would share a composition resource name, or
// a kind and a name: model names whose object names collide although their
// DNS labels differ ("a" and "a-service" both make engine-a-service), or a
// model named like one of the router's objects. Crossplane would compose
// only one of them, or apply both to the same object.
func Clashes(s *resolve.Stack, groups [][]Object) error {
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
func clash(s *resolve.Stack, a, b int, what string) string {
	from := func(g int) string {
		if g >= len(s.Engines) {
			return "the router"
		}
		e := s.Engines[g]
		if e.Version != "" {
			return fmt.Sprintf("the %s of %s.name %q", e.Version, e.Path, e.Model.Name)
		}
		return fmt.Sprintf("%s.name %q", e.Path, e.Model.Name)
	}
	return fmt.Sprintf("%s and %s both make the %s: rename the model", from(b), from(a), what)
}
