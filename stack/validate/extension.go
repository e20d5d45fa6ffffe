package validate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateExtension checks spec.inferenceExtension and refuses what the
// routing layer cannot do yet, with the reason.
func validateExtension(f *Findings, spec *v1alpha1.ProductionStackSpec, s *resolve.Stack) {
	x := s.Extension
	if x == nil {
		return
	}
	const p = "spec.inferenceExtension"
	validateHTTPRoute(f, p, &v1alpha1.HTTPRoute{ParentRefs: x.Spec.ParentRefs, Hostnames: x.Spec.Hostnames})
	if x.ReleaseErr != nil {
		f.errorf("%s.%s", p, x.ReleaseErr)
	} else if newest := upstream.PickerNewest[x.Release.Kind]; newest.Less(x.Release.Version) {
		f.warnf("%s.picker: %s (%s) is newer than %s %s, the newest release this function knows: its flags and configuration are rendered as for %s", p, x.Release, x.From, x.Release.Kind, newest, newest)
	}
	if pk := x.Spec.Picker; pk != nil {
		image(f, p+".picker.image", pk.Image)
		oneOf(f, p+".picker.imagePullPolicy", pk.ImagePullPolicy, pullPolicies)
		if pk.Replicas != nil && (*pk.Replicas < 1 || *pk.Replicas > 8) {
			f.errorf("%s.picker.replicas %d is invalid: must be from 1 to 8", p, *pk.Replicas)
		}
		if pk.Resources != nil {
			validateResourceRequirements(f, p+".picker.resources", *pk.Resources)
		}
		validateScheduling(f, p+".picker.scheduling", pk.Scheduling)
	}
	if w := x.Weights; w.Queue <= 0 && w.KVCacheUtilization <= 0 && w.PrefixCache <= 0 {
		f.errorf("%s.picker.scorers: every weight is 0, and the picker needs a scorer to choose an endpoint: give at least one a weight above 0", p)
	}
	oneOf(f, p+".failureMode", x.Spec.FailureMode, []string{"FailOpen", "FailClose"})
	validateModelPaths(f, s)
	if t := x.Spec.RequestTimeout; t != "" {
		if d, err := time.ParseDuration(t); err == nil {
			for _, e := range s.Engines {
				if ttl := build.PickerRequestTTL(e); ttl > 0 && int64(d/time.Second) < ttl {
					f.errorf("%s.requestTimeout %s is shorter than %s.scaleToZero's cold-start time of %d seconds: the gateway would give up on a request the picker holds for the model's start; raise it to at least %ds, or remove it (the default leaves a minute more)", p, t, e.Block, ttl, ttl+build.RouteMarginSeconds)
				}
			}
		}
	}
	disaggregated := false
	for _, e := range s.Engines {
		if e.Role == resolve.RolePrefill {
			disaggregated = true
			validatePickerPD(f, s, e)
		}
	}
	if sc := x.Spec.RoutingSidecar; sc != nil {
		if !disaggregated {
			f.warnf("%s.routingSidecar: it runs on the decode pods of a disaggregated model, and the stack has none: it is not used", p)
		}
		image(f, p+".routingSidecar.image", sc.Image)
		oneOf(f, p+".routingSidecar.imagePullPolicy", sc.ImagePullPolicy, pullPolicies)
	}
	if np := spec.NetworkPolicy; resolve.On(np != nil, np.GetEnabled()) {
		f.errorf("%s: networkPolicy lets only the router reach the engines, and with the inference extension the Gateway's proxies send the requests and the pickers scrape the engines: remove networkPolicy, or route through the router", p)
	}
	if rc := spec.RouterConfig; rc != nil {
		if resolve.RouterTypeChosen(rc) {
			f.errorf("%s: routerConfig.routerType %s is the production-stack router's, and the endpoint picker routes the stack's requests: remove routerType, and weigh the picker's scorers (picker.scorers) instead", p, rc.RouterType)
		}
		if resolve.On(rc.Ingress != nil, rc.Ingress.GetEnabled()) || resolve.On(rc.HTTPRoute != nil, rc.HTTPRoute.GetEnabled()) {
			f.errorf("%s: routerConfig.ingress and routerConfig.httpRoute expose the router, which a stack on the inference extension does not run: remove them; the stack's HTTPRoute attaches to inferenceExtension.parentRefs", p)
		}
		if unused := routerFieldsUnused(rc); len(unused) > 0 {
			verb, effect := "configure", "they have no effect; remove them"
			if len(unused) == 1 {
				verb, effect = "configures", "it has no effect; remove it"
			}
			f.warnf("%s: %s %s the production-stack router, which a stack on the inference extension does not run: %s (inferenceExtension.picker configures the endpoint pickers)", p, strings.Join(unused, ", "), verb, effect)
		}
	}
}

// validateObjectives checks each model's inferenceObjectives: only with
// the inference extension, whose pickers read them; names that are DNS
// labels, unique per model, whose objects' names (what clients send) are
// DNS subdomains.
func validateObjectives(f *Findings, s *resolve.Stack) {
	for _, e := range s.Engines {
		if e.Role == resolve.RoleDecode {
			continue // a disaggregated model is checked once, with its prefill group
		}
		p := e.Path + ".inferenceObjectives"
		if len(e.Model.InferenceObjectives) == 0 {
			continue
		}
		if !resolve.ExtensionOn(s) {
			f.errorf("%s: an objective is a priority the inference extension's endpoint picker gives the requests that name it, and the stack routes through the production-stack router, which has none: set spec.inferenceExtension, or remove %s", p, p)
			continue
		}
		seen := map[string]bool{}
		for i, o := range e.Model.InferenceObjectives {
			at := fmt.Sprintf("%s[%d].name", p, i)
			switch {
			case len(validation.IsDNS1123Label(o.Name)) > 0:
				f.errorf("%s %q is not a DNS label: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit, such as batch", at, o.Name)
				continue
			case seen[o.Name]:
				f.errorf("%s %q is the name of an earlier objective of the model: give each objective its own name", at, o.Name)
				continue
			}
			seen[o.Name] = true
			if n := s.Names.InferenceObjective(e.ModelID, o.Name); len(n) > names.MaxSubdomainLength {
				f.errorf("%s %q names the InferenceObjective %s, %d characters, and an object name has at most %d: clients send it in the objective header, so it is not shortened; shorten the objective's name, the model's or the stack's", at, o.Name, n, len(n), names.MaxSubdomainLength)
			}
		}
	}
}

// validateModelPaths refuses a model whose path (/<model>) would take the
// requests clients of the gateway's root send to /v1/...: the longest
// prefix wins across a Gateway's routes, and the model's route strips it.
func validateModelPaths(f *Findings, s *resolve.Stack) {
	var names []string
	for _, e := range resolve.PoolModels(s) {
		if resolve.ModelPath(e) == "/v1" {
			f.errorf("%s.name %q: behind the inference extension a model is served at /<model>/v1, and /v1 is where the gateway's root serves the OpenAI API: the route of this model would take every /v1/... request; rename the model", e.Path, e.Model.Name)
		}
		if q := fmt.Sprintf("%q", e.Model.Name); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	if root := s.Extension.Spec.RootModel; root != "" && !slices.Contains(names, fmt.Sprintf("%q", root)) {
		f.errorf("spec.inferenceExtension.rootModel %s is not a model of the stack: name one of %s, or remove rootModel", resolve.ClipQuote(root), strings.Join(names, ", "))
	}
}

// routerFieldsUsedByExtension are the routerConfig fields a stack on the
// inference extension reads or refuses: apiKeySecret is the engines'
// VLLM_API_KEY; routerType, ingress and httpRoute are refused when they
// would act (validateExtension), the routing logics' knobs by their own
// rules (validateRouting, the XRD's CEL rules).
var routerFieldsUsedByExtension = map[string]bool{
	"apiKeySecret": true, "routerType": true, "ingress": true, "httpRoute": true,
	"prefixMinMatchLength": true, "lmcacheControllerPort": true, "lmcacheControllerReplyPort": true,
	"lmcacheControllerHeartbeatPort": true, "kvAwareThreshold": true,
}

// routerFieldsUnused names every routerConfig field set that only the
// router's objects read, in the order of the XRD: with the extension the
// stack composes none of them. A field added to RouterConfig is reported
// unless it is added to routerFieldsUsedByExtension.
func routerFieldsUnused(rc *v1alpha1.RouterConfig) []string {
	var names []string
	v := reflect.ValueOf(rc).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if !routerFieldsUsedByExtension[name] && !v.Field(i).IsZero() {
			names = append(names, "routerConfig."+name)
		}
	}
	return names
}
