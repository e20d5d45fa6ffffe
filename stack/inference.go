package stack

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// The inference extension's routing layer (spec.inferenceExtension): per
// model an InferencePool over the model's serving pods and an endpoint
// picker that chooses one of them for each request, and one HTTPRoute on
// the user's Gateway whose backends are the pools. It replaces the
// production-stack router. The objects are built by stack/inferencepool
// from the values decided here.

// ComponentPicker is the component label of the endpoint pickers' objects.
const ComponentPicker = "endpoint-picker"

// annotationObjectives, on a picker's pods, is the apiVersion of its
// model's InferenceObjectives; absent when the model has none.
const annotationObjectives = "serving.vllm.ai/inference-objectives"

// extension is spec.inferenceExtension with defaults applied.
type extension struct {
	spec       *v1alpha1.InferenceExtension
	image      string
	release    upstream.PickerRelease
	releaseErr error
	from       string // where the release comes from, for messages
	replicas   int32
	weights    inferencepool.Weights
	// sidecar is the routing sidecar of disaggregated models' decode pods.
	sidecar sidecar
}

// DefaultPickerImage is the endpoint picker a stack runs unless it names one.
var DefaultPickerImage = upstream.LLMDPickerImage + ":v" + upstream.DefaultPicker.Version.String()

// extensionOn reports whether the stack routes through the inference
// extension.
func extensionOn(s *resolvedStack) bool { return s.extension != nil }

// resolveExtension applies the defaults of an enabled inferenceExtension
// block; nil when the stack runs the router.
func resolveExtension(x *v1alpha1.InferenceExtension) *extension {
	if x == nil || !ptr.Deref(x.Enabled, true) {
		return nil
	}
	p := x.Picker
	if p == nil {
		p = &v1alpha1.EndpointPicker{}
	}
	e := &extension{spec: x, image: or(p.Image, DefaultPickerImage), replicas: ptr.Deref(p.Replicas, 1), weights: inferencepool.DefaultWeights}
	e.release, e.from, e.releaseErr = resolvePickerRelease(e.image, p.Version)
	e.sidecar = resolveSidecar(x, e.release)
	if w := p.Scorers; w != nil {
		e.weights.Queue = ptr.Deref(w.Queue, e.weights.Queue)
		e.weights.KVCacheUtilization = ptr.Deref(w.KVCacheUtilization, e.weights.KVCacheUtilization)
		e.weights.PrefixCache = ptr.Deref(w.PrefixCache, e.weights.PrefixCache)
	}
	return e
}

// resolvePickerRelease is the picker's release: its image's tag when the
// image is one of the two pickers' and its tag a release, else
// picker.version with the kind the image names.
func resolvePickerRelease(image, declared string) (upstream.PickerRelease, string, error) {
	repo, tag := upstream.ImageTag(image)
	kind := upstream.PickerKindOf(repo)
	if kind == "" {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.image %s is neither llm-d's endpoint picker (%s) nor the inference extension's (%s): the function spells the picker's flags and configuration by release, so it must know which program runs; use one of the two, or your mirror of one under the same repository name", image, upstream.LLMDPickerImage, upstream.GAIEPickerImage)
	}
	if t, ok := upstream.ParseVersion(tag); ok {
		if d, ok := upstream.ParseVersion(declared); declared != "" && (!ok || d != t) {
			return upstream.DefaultPicker, "", fmt.Errorf("picker.version %s contradicts picker.image %s, which runs %s %s: remove picker.version or make the two agree", declared, image, kind, t)
		}
		return checkPickerSupported(upstream.PickerRelease{Kind: kind, Version: t}, "picker.image "+image)
	}
	if declared == "" {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.image %s names no release (tag %q): set picker.version to the release it runs, such as %s", image, tag, upstream.PickerNewest[kind])
	}
	d, ok := upstream.ParseVersion(declared)
	if !ok {
		return upstream.DefaultPicker, "", fmt.Errorf("picker.version %q is not a release: use a release number such as %s", declared, upstream.PickerNewest[kind])
	}
	return checkPickerSupported(upstream.PickerRelease{Kind: kind, Version: d}, "picker.version "+declared)
}

func checkPickerSupported(r upstream.PickerRelease, from string) (upstream.PickerRelease, string, error) {
	if oldest := upstream.PickerOldest[r.Kind]; r.Version.Less(oldest) {
		why := "the oldest release whose flags and configuration the function renders"
		if r.Kind == upstream.PickerGAIE {
			why = "the first that starts without the InferenceObjective CRD (earlier releases watch InferenceObjectives whether or not their CRD is served, and the stack installs no CRD)"
		}
		return r, from, fmt.Errorf("%s runs %s, older than %s %s, %s: use %s %s or later", from, r, r.Kind, oldest, why, r.Kind, oldest)
	}
	return r, from, nil
}

// pool is the InferencePool and picker of one model; e stands for the
// model (poolModel).
func pool(s *resolvedStack, e engine) inferencepool.Pool {
	x := s.extension
	p := x.spec.Picker
	if p == nil {
		p = &v1alpha1.EndpointPicker{}
	}
	name := s.names.picker(e.id)
	l := labels(s.name, shorten(e.id, maxLabelLength), ComponentPicker)
	l[labelModel] = e.label
	pk := inferencepool.Picker{
		Name:          name,
		Image:         x.image,
		PullPolicy:    corev1.PullPolicy(p.ImagePullPolicy),
		Release:       x.release,
		Replicas:      x.replicas,
		Resources:     inferencepool.DefaultResources(),
		PodLabels:     selector(s.name, shorten(e.id, maxLabelLength), ComponentPicker),
		Weights:       x.weights,
		KVCacheMetric: pickerKVCacheMetric(x.release, e),
		// A model at zero: the picker holds its requests.
		RequestTTLSeconds: pickerRequestTTL(e),
		Disaggregated:     e.role != "",
	}
	if p.Resources != nil {
		pk.Resources = *p.Resources
	}
	if len(e.model.InferenceObjectives) > 0 {
		// The picker decides at start, from API discovery, whether to
		// watch InferenceObjectives (GAIE.md §h): one started before
		// their CRD was installed never reads them. The annotation
		// restarts it when a model gains its first objective (the stack
		// is refused while the CRD is missing) or changes group.
		pk.PodAnnotations = map[string]string{annotationObjectives: upstream.PickerObjectiveOf(x.release).APIVersion}
	}
	if sc := p.Scheduling; sc != nil {
		pk.NodeSelector, pk.Tolerations, pk.Affinity = sc.NodeSelector, sc.Tolerations, sc.Affinity
	}
	return inferencepool.Pool{
		Name: s.names.inferencePool(e.id), Namespace: s.namespace, Labels: l,
		Selector:    poolSelector(s, e),
		TargetPort:  enginePort,
		FailureMode: x.spec.FailureMode,
		Picker:      pk,
	}
}

// pickerKVCacheMetric is the engines' KV-cache metric for the picker's
// flag when the picker's default is a name the engines' vLLM does not
// export; "" when it is.
func pickerKVCacheMetric(r upstream.PickerRelease, e engine) string {
	def := upstream.PickerKVCacheMetric(r)
	names := upstream.VLLMKVCacheMetrics(e.vllm.version)
	if len(names) == 0 || slices.Contains(names, def) {
		return ""
	}
	return names[len(names)-1]
}

// poolObjects are the objects of one model's pool, under keys of the
// model's; e stands for the model (poolModel). The RoleBinding waits for
// its Role, as the router's does.
func poolObjects(s *resolvedStack, e engine, o Observed) []Object {
	p := pool(s, e)
	objs := []Object{
		{engineKey(e.id) + "-inferencepool", inferencepool.InferencePool(p)},
		{pickerKey(e.id), inferencepool.Deployment(p)},
		{pickerKey(e.id) + "-service", inferencepool.Service(p)},
		{pickerKey(e.id) + "-serviceaccount", inferencepool.ServiceAccount(p)},
		{pickerKey(e.id) + "-config", inferencepool.ConfigMap(p)},
		{pickerKey(e.id) + "-role", inferencepool.Role(p)},
	}
	if o.Has(pickerKey(e.id) + "-role") {
		objs = append(objs, Object{pickerKey(e.id) + "-rolebinding", inferencepool.RoleBinding(p)})
	}
	for _, o := range objectives(s, e) {
		objs = append(objs, Object{objectiveKey(e.id, o.spec.Name, o.APIVersion), inferencepool.InferenceObjective(o.Objective)})
	}
	return objs
}

// objectiveKey is the composition resource name of a model's objective,
// with its API group: an objective moves between groups when the picker's
// release changes (inference.networking.x-k8s.io, llm-d.ai), and a key
// never changes group (keys.go).
func objectiveKey(model, objective, apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return engineKey(model) + "-objective-" + objective + "." + group
}

// An objective is one of a model's inferenceObjectives as its pool's
// picker reads it.
type objective struct {
	inferencepool.Objective
	spec v1alpha1.InferenceObjective
	// header is the request header, name and value, that selects it.
	header string
}

// objectives are a model's inferenceObjectives, in the group the picker's
// release watches; none without the inference extension. A disaggregated
// model's are its prefill group's (its decode group has none: one pool).
func objectives(s *resolvedStack, e engine) []objective {
	if !extensionOn(s) || e.role == roleDecode {
		return nil
	}
	po := upstream.PickerObjectiveOf(s.extension.release)
	l := labels(s.name, shorten(e.modelID, maxLabelLength), ComponentPicker)
	l[labelModel] = e.modelLabel
	out := make([]objective, 0, len(e.model.InferenceObjectives))
	for _, o := range e.model.InferenceObjectives {
		name := s.names.inferenceObjective(e.modelID, o.Name)
		out = append(out, objective{
			Objective: inferencepool.Objective{
				Name: name, Namespace: s.namespace, Labels: l,
				APIVersion: po.APIVersion, Pool: s.names.inferencePool(e.modelID), Priority: int32(o.Priority), //nolint:gosec // the XRD's bounds, checked
			},
			spec:   o,
			header: po.Header + ": " + name,
		})
	}
	return out
}

// pickerKey is the composition resource name of a model's picker.
func pickerKey(model string) string { return "engine-" + model + "-epp" }

// validateExtension checks spec.inferenceExtension and refuses what the
// routing layer cannot do yet, with the reason.
func validateExtension(f *Findings, spec *v1alpha1.ProductionStackSpec, s *resolvedStack) {
	x := s.extension
	if x == nil {
		return
	}
	const p = "spec.inferenceExtension"
	validateHTTPRoute(f, p, &v1alpha1.HTTPRoute{ParentRefs: x.spec.ParentRefs, Hostnames: x.spec.Hostnames})
	if x.releaseErr != nil {
		f.errorf("%s.%s", p, x.releaseErr)
	} else if newest := upstream.PickerNewest[x.release.Kind]; newest.Less(x.release.Version) {
		f.warnf("%s.picker: %s (%s) is newer than %s %s, the newest release this function knows: its flags and configuration are rendered as for %s", p, x.release, x.from, x.release.Kind, newest, newest)
	}
	if pk := x.spec.Picker; pk != nil {
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
	if w := x.weights; w.Queue <= 0 && w.KVCacheUtilization <= 0 && w.PrefixCache <= 0 {
		f.errorf("%s.picker.scorers: every weight is 0, and the picker needs a scorer to choose an endpoint: give at least one a weight above 0", p)
	}
	oneOf(f, p+".failureMode", x.spec.FailureMode, []string{"FailOpen", "FailClose"})
	validateModelPaths(f, s)
	if t := x.spec.RequestTimeout; t != "" {
		if d, err := time.ParseDuration(t); err == nil {
			for _, e := range s.engines {
				if ttl := pickerRequestTTL(e); ttl > 0 && int64(d/time.Second) < ttl {
					f.errorf("%s.requestTimeout %s is shorter than %s.scaleToZero's cold-start time of %d seconds: the gateway would give up on a request the picker holds for the model's start; raise it to at least %ds, or remove it (the default leaves a minute more)", p, t, e.block, ttl, ttl+routeMarginSeconds)
				}
			}
		}
	}
	disaggregated := false
	for _, e := range s.engines {
		if e.role == rolePrefill {
			disaggregated = true
			validatePickerPD(f, s, e)
		}
	}
	if sc := x.spec.RoutingSidecar; sc != nil {
		if !disaggregated {
			f.warnf("%s.routingSidecar: it runs on the decode pods of a disaggregated model, and the stack has none: it is not used", p)
		}
		image(f, p+".routingSidecar.image", sc.Image)
		oneOf(f, p+".routingSidecar.imagePullPolicy", sc.ImagePullPolicy, pullPolicies)
	}
	if np := spec.NetworkPolicy; on(np != nil, np.GetEnabled()) {
		f.errorf("%s: networkPolicy lets only the router reach the engines, and with the inference extension the Gateway's proxies send the requests and the pickers scrape the engines: remove networkPolicy, or route through the router", p)
	}
	if rc := spec.RouterConfig; rc != nil {
		if routerTypeChosen(rc) {
			f.errorf("%s: routerConfig.routerType %s is the production-stack router's, and the endpoint picker routes the stack's requests: remove routerType, and weigh the picker's scorers (picker.scorers) instead", p, rc.RouterType)
		}
		if on(rc.Ingress != nil, rc.Ingress.GetEnabled()) || on(rc.HTTPRoute != nil, rc.HTTPRoute.GetEnabled()) {
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
func validateObjectives(f *Findings, s *resolvedStack) {
	for _, e := range s.engines {
		if e.role == roleDecode {
			continue // a disaggregated model is checked once, with its prefill group
		}
		p := e.path + ".inferenceObjectives"
		if len(e.model.InferenceObjectives) == 0 {
			continue
		}
		if !extensionOn(s) {
			f.errorf("%s: an objective is a priority the inference extension's endpoint picker gives the requests that name it, and the stack routes through the production-stack router, which has none: set spec.inferenceExtension, or remove %s", p, p)
			continue
		}
		seen := map[string]bool{}
		for i, o := range e.model.InferenceObjectives {
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
			if n := s.names.inferenceObjective(e.modelID, o.Name); len(n) > maxSubdomainLength {
				f.errorf("%s %q names the InferenceObjective %s, %d characters, and an object name has at most %d: clients send it in the objective header, so it is not shortened; shorten the objective's name, the model's or the stack's", at, o.Name, n, len(n), maxSubdomainLength)
			}
		}
	}
}

// InferenceExtension reports whether the stack routes through the inference
// extension instead of the production-stack router.
func (s *Stack) InferenceExtension() bool { return extensionOn(s.r) }

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
