package stack

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Defaults of the ProductionStack API. The XRD carries the same values for
// the top-level fields (xrd/v1alpha1.TopLevelDefaults); the function applies
// them again because `crossplane render` does not apply the XRD, and because
// per-model items inherit them.
const (
	DefaultEngineImage        = "vllm/vllm-openai:latest"
	DefaultImagePullRegistry  = "docker.io"
	DefaultDeploymentStrategy = "RollingUpdate"
	DefaultReplicas           = int32(1)
	DefaultGPUType            = "nvidia.com/gpu"
	DefaultStorageSize        = "50Gi"
	DefaultHFTokenKey         = "token"
	DefaultRouterType         = "roundrobin"
	DefaultSessionKey         = "x-user-id"
	DefaultRouterImage        = "lmcache/lmstack-router"
	DefaultRouterTag          = "latest"
	DefaultRouterReplicas     = int32(1)
	DefaultShmSize            = "20Gi"
	// The LMCache controller's ports in the router (the router's own
	// default, then the chart's), the engines' LMCache worker port, and the
	// seconds between worker heartbeats, for kvaware routing.
	DefaultLMCacheControllerPort          = int32(9000)
	DefaultLMCacheControllerReplyPort     = int32(9001)
	DefaultLMCacheControllerHeartbeatPort = int32(9002)
	DefaultLMCacheWorkerPort              = int32(8001)
	DefaultLMCacheWorkerHeartbeatTime     = int32(10)
)

// engine is one model's engine, with the top-level engine blocks merged in
// and every default applied. Builders read only this.
type engine struct {
	path   string // spec path of the model's fields: "spec.model" or "spec.models[i]"
	block  string // spec path of its engine blocks: "spec" or "spec.models[i]"
	model  v1alpha1.Model
	cfg    v1alpha1.EngineConfig // merged; every block non-nil
	id     string                // the model name made a DNS label (M)
	label  string                // value of the pod label "model"
	served string                // the name clients use in the OpenAI API
	// role is the group of a disaggregated model the engine serves
	// (rolePrefill, roleDecode), "" for an ordinary engine.
	role string
	// modelID and modelLabel are the model's id and label: a group's
	// differ from its own (M-prefill, M-decode), an engine's are its own.
	modelID, modelLabel string
	// picked marks a disaggregated model's group behind llm-d's endpoint
	// picker, which schedules prefill and decode itself: its pods carry
	// the picker's role label, and a decode group's run the routing sidecar
	// in front of vLLM (pdBehindPicker).
	picked bool
	// lwsWorker marks the worker pods' engine of a multi-node model, whose
	// arguments differ from its leader's (multiNodeArgs).
	lwsWorker bool
	// Names of the pod's model cache and chat template volumes, which the
	// chart derives from the stack's name: see names.modelCacheVolume.
	cacheVolume, templatesVolume string
	// The vLLM release the engine runs; vllmErr says why the version the
	// stack names cannot be used (validation reports it).
	vllm    programVersion
	vllmErr error
	// layers are the blocks of the spec cfg is merged from, in order, where
	// the user wrote them: validation checks each (validateLayers) and
	// names the field where it was written (origin).
	layers []layer
}

// A layer is one block of the spec an engine's configuration is merged
// from: the top level, a models[] item, a disaggregation group. Every
// layer of every engine goes through the same checks (validateLayers), so
// a kind of engine made of a new block cannot escape them.
type layer struct {
	path string                // "spec", "spec.models[0]", "spec.disaggregation.decode"
	cfg  v1alpha1.EngineConfig // what the block sets, as engine blocks
	// flat are the engine blocks whose fields the block holds directly: a
	// group's tensorParallelSize and extraArgs are vllmConfig's, its
	// nodeSelector and tolerations scheduling's.
	flat []string
}

// isGroup reports whether the layer is a disaggregation group's, the only
// blocks that hold engine blocks' fields directly.
func (l layer) isGroup() bool { return l.flat != nil }

// at is the path of a field of the engine blocks (such as
// "vllmConfig.extraArgs") where the layer's user writes it.
func (l layer) at(field string) string {
	for _, b := range l.flat {
		if field == b {
			return l.path
		}
		if rest, ok := strings.CutPrefix(field, b+"."); ok {
			return l.path + "." + rest
		}
	}
	return l.path + "." + field
}

// sets reports whether the layer sets a field of the engine blocks, a
// dotted path of JSON names such as "resources.memory".
func (l layer) sets(field string) bool {
	v := reflect.ValueOf(l.cfg)
	for _, name := range strings.Split(field, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		f, ok := jsonField(v, name)
		if !ok {
			return false
		}
		v = f
	}
	return !v.IsZero()
}

// jsonField is the field of struct v whose JSON name is name.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i), true
		}
		if t.Field(i).Anonymous {
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

// origin is the path of the field as written where the engine's value of
// it comes from: the last layer that sets it, or the engine's own block
// (e.block) when no layer beyond it does, as messages on merged values
// always named it.
func (e engine) origin(field string) string {
	for i := len(e.layers) - 1; i >= 0; i-- {
		l := e.layers[i]
		if l.path == e.block {
			break
		}
		if l.sets(field) {
			return l.at(field)
		}
	}
	return e.block + "." + field
}

// where is the block a message on a check across fields names: the last
// layer beyond the engine's own block that sets any of them, else the
// engine's block (e.block); name gives each field as the message writes it
// after that block: relative where the block sets it, else where it comes
// from (origin).
func (e engine) where(fields ...string) (block string, name func(field string) string) {
	for i := len(e.layers) - 1; i >= 0; i-- {
		l := e.layers[i]
		if l.path == e.block {
			break
		}
		for _, f := range fields {
			if l.sets(f) {
				return l.path, func(field string) string {
					if l.sets(field) {
						return strings.TrimPrefix(strings.TrimPrefix(l.at(field), l.path), ".")
					}
					return e.origin(field)
				}
			}
		}
	}
	return e.block, func(field string) string { return field }
}

// router is the router's configuration with defaults applied.
type router struct {
	routerType string
	sessionKey string
	image      string
	// The router release; versionErr says why the version the stack names
	// cannot be used (validation reports it).
	version    programVersion
	versionErr error
	pullPolicy corev1.PullPolicy
	pullSecret string
	replicas   int32
	scheduling *v1alpha1.Scheduling
	podAnnots  map[string]string
	// serviceAccount is the user's ServiceAccount; "" runs the router as
	// the stack's own.
	serviceAccount string
	extraVolumes   []corev1.Volume
	extraMounts    []corev1.VolumeMount
	// Routing knobs: prefixMinMatch for prefixaware; the LMCache
	// controller's ports (set only for kvaware) and kvThreshold for kvaware.
	prefixMinMatch *int32
	controllerPort int32
	replyPort      int32
	heartbeatPort  int32
	kvThreshold    *int32
	resources      corev1.ResourceRequirements
	discoveryType  string // "" leaves the router's default (pod-ip)
	extraArgs      []string
	env            []corev1.EnvVar
	apiKey         *v1alpha1.SecretKeySelector // also given to every engine
	serviceType    corev1.ServiceType
	servicePort    int32
	serviceAnnots  map[string]string
	nodePort       *int32
	pdb            *v1alpha1.PodDisruptionBudget
	autoscaling    *v1alpha1.RouterAutoscaling
	ingress        *v1alpha1.Ingress
	httpRoute      *v1alpha1.HTTPRoute
}

// engines merges the top-level engine blocks into each model and applies
// defaults. It does not validate; see validate.
func engines(spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input, n names) []engine {
	var out []engine
	add := func(e engine) {
		if disaggregated(e.cfg) {
			out = append(out, split(e, n)...)
			return
		}
		out = append(out, e)
	}
	top := layer{path: "spec", cfg: spec.EngineConfig}
	if spec.Model != nil {
		e := newEngine("spec.model", "spec", *spec.Model, resolveConfig(spec.EngineConfig, in), in, n)
		e.layers = []layer{top}
		add(e)
		return out
	}
	for i, m := range spec.Models {
		cfg := resolveConfig(mergeConfig(spec.EngineConfig, m.EngineConfig), in)
		p := fmt.Sprintf("spec.models[%d]", i)
		e := newEngine(p, p, m.Model, cfg, in, n)
		e.layers = []layer{top, {path: p, cfg: m.EngineConfig}}
		add(e)
	}
	return out
}

func newEngine(path, block string, m v1alpha1.Model, cfg v1alpha1.EngineConfig, in *v1beta1.Input, n names) engine {
	id := dnsLabel(m.Name)
	label := m.Name
	if !isLabelValue(label) {
		label = shorten(id, maxLabelLength)
	}
	served := m.ServedModelName
	if served == "" {
		served = m.ModelURL
	}
	if served == "" {
		served = m.Name
	}
	ver, err := resolveVLLMVersion(cfg.VLLMConfig, in)
	return engine{path: path, block: block, model: m, cfg: cfg, id: id, label: label, served: served, vllm: ver, vllmErr: err,
		modelID: id, modelLabel: label,
		cacheVolume: n.modelCacheVolume(), templatesVolume: n.chatTemplatesVolume(id)}
}

// mergeConfig overlays an item's engine blocks on the top-level ones, field by
// field: a field the item sets wins, a block the item sets is merged into the
// top-level block, env is merged by variable name. Neither input is changed.
func mergeConfig(base, over v1alpha1.EngineConfig) v1alpha1.EngineConfig {
	out := base
	overlay(reflect.ValueOf(&out).Elem(), reflect.ValueOf(over))
	out.Env = mergeEnv(base.Env, over.Env)
	return out
}

// overlay copies every field that src sets into dst. Pointers to structs are
// merged recursively into a fresh copy, so dst never aliases what it was
// given; any other pointer, slice, map or non-empty string replaces dst's.
func overlay(dst, src reflect.Value) {
	for i := range src.NumField() {
		s, d := src.Field(i), dst.Field(i)
		switch s.Kind() {
		case reflect.Pointer:
			if s.IsNil() {
				continue
			}
			if s.Elem().Kind() == reflect.Struct && !d.IsNil() {
				merged := reflect.New(s.Elem().Type())
				merged.Elem().Set(d.Elem())
				overlay(merged.Elem(), s.Elem())
				d.Set(merged)
				continue
			}
			d.Set(s)
		case reflect.Slice, reflect.Map:
			if !s.IsNil() {
				d.Set(s)
			}
		case reflect.Struct:
			overlay(d, s)
		default:
			if !s.IsZero() {
				d.Set(s)
			}
		}
	}
}

// mergeEnv returns base with every variable of over replacing the one of the
// same name in place, and the others appended in order.
func mergeEnv(base, over []corev1.EnvVar) []corev1.EnvVar {
	if len(over) == 0 {
		return base
	}
	out := make([]corev1.EnvVar, len(base), len(base)+len(over))
	copy(out, base)
	return overrideEnv(out, over)
}

// overrideEnv replaces variables of env by name with those of over and
// appends the rest. It writes into env.
func overrideEnv(env, over []corev1.EnvVar) []corev1.EnvVar {
	index := make(map[string]int, len(env))
	for i, e := range env {
		index[e.Name] = i
	}
	for _, e := range over {
		if i, ok := index[e.Name]; ok {
			env[i] = e
			continue
		}
		index[e.Name] = len(env)
		env = append(env, e)
	}
	return env
}

// resolveConfig applies defaults to a merged engine configuration: the
// Input's defaults first, then the API's. Every block comes back non-nil.
func resolveConfig(c v1alpha1.EngineConfig, in *v1beta1.Input) v1alpha1.EngineConfig {
	if c.DeploymentStrategy == "" {
		c.DeploymentStrategy = DefaultDeploymentStrategy
	}
	if c.Replicas == nil {
		c.Replicas = ptr.To(DefaultReplicas)
	}

	v := &v1alpha1.VLLMConfig{}
	if c.VLLMConfig != nil {
		*v = *c.VLLMConfig
	}
	if v.Image == "" {
		v.Image = or(in.GetEngine().Image, DefaultEngineImage)
	}
	if v.ImagePullRegistry == "" {
		v.ImagePullRegistry = or(in.GetEngine().ImagePullRegistry, DefaultImagePullRegistry)
	}
	if v.HFTokenSecret != nil && v.HFTokenSecret.Key == "" {
		v.HFTokenSecret = &v1alpha1.SecretKeySelector{Name: v.HFTokenSecret.Name, Key: DefaultHFTokenKey}
	}
	c.VLLMConfig = v

	l := &v1alpha1.LMCacheConfig{}
	if c.LMCacheConfig != nil {
		*l = *c.LMCacheConfig
	}
	c.LMCacheConfig = l

	r := &v1alpha1.Resources{}
	if c.Resources != nil {
		*r = *c.Resources
	}
	if r.GPUType == "" {
		r.GPUType = DefaultGPUType
	}
	c.Resources = r

	s := &v1alpha1.Storage{}
	if c.Storage != nil {
		*s = *c.Storage
	}
	if s.Enabled == nil {
		s.Enabled = ptr.To(true)
	}
	if s.ExistingClaimName == "" && s.EmptyDir == nil {
		if s.Size == "" {
			s.Size = or(in.GetStorage().Size, DefaultStorageSize)
		}
		if s.StorageClassName == nil && in.GetStorage().StorageClassName != "" {
			s.StorageClassName = ptr.To(in.GetStorage().StorageClassName)
		}
		if len(s.AccessModes) == 0 {
			s.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
	}
	c.Storage = s

	if c.Scheduling == nil {
		c.Scheduling = &v1alpha1.Scheduling{}
	}
	if c.Pod == nil {
		c.Pod = &v1alpha1.PodConfig{}
	}
	if c.Probes == nil {
		c.Probes = &v1alpha1.Probes{}
	}
	if c.Service == nil {
		c.Service = &v1alpha1.EngineService{}
	}
	return c
}

// resolveRouter applies defaults to the router's configuration.
func resolveRouter(rc *v1alpha1.RouterConfig, in *v1beta1.Input) router {
	if rc == nil {
		rc = &v1alpha1.RouterConfig{}
	}
	r := router{
		routerType: or(rc.RouterType, DefaultRouterType),
		sessionKey: or(rc.SessionKey, DefaultSessionKey),
		image:      rc.Image,
		replicas:   ptr.Deref(rc.Replicas, DefaultRouterReplicas),
	}
	if r.image == "" {
		r.image = or(in.GetRouter().Image, DefaultRouterImage) + ":" + or(in.GetRouter().Tag, DefaultRouterTag)
	}
	r.version, r.versionErr = resolveRouterVersion(r.image, rc.RouterVersion, in)
	if rc.Resources != nil {
		r.resources = *rc.Resources.DeepCopy()
	} else {
		r.resources = defaultRouterResources()
	}
	r.pullPolicy = corev1.PullPolicy(rc.ImagePullPolicy)
	r.pullSecret = rc.ImagePullSecretName
	r.scheduling = rc.Scheduling
	r.podAnnots = rc.PodAnnotations
	r.serviceAccount = rc.ServiceAccountName
	r.extraVolumes, r.extraMounts = rc.ExtraVolumes, rc.ExtraVolumeMounts
	r.prefixMinMatch = rc.PrefixMinMatchLength
	if r.routerType == routingKVAware {
		r.controllerPort = ptr.Deref(rc.LMCacheControllerPort, DefaultLMCacheControllerPort)
		r.replyPort = ptr.Deref(rc.LMCacheControllerReplyPort, DefaultLMCacheControllerReplyPort)
		r.heartbeatPort = ptr.Deref(rc.LMCacheControllerHeartbeatPort, DefaultLMCacheControllerHeartbeatPort)
		r.kvThreshold = rc.KVAwareThreshold
	}
	r.discoveryType = rc.K8sServiceDiscoveryType
	r.extraArgs = rc.ExtraArgs
	r.env = rc.Env
	if k := rc.APIKeySecret; k != nil {
		r.apiKey = &v1alpha1.SecretKeySelector{Name: k.Name, Key: or(k.Key, DefaultHFTokenKey)}
	}
	r.serviceType, r.servicePort = corev1.ServiceTypeClusterIP, servicePort
	if svc := rc.Service; svc != nil {
		r.serviceType = corev1.ServiceType(or(svc.Type, string(corev1.ServiceTypeClusterIP)))
		r.servicePort = ptr.Deref(svc.Port, servicePort)
		r.serviceAnnots = svc.Annotations
		r.nodePort = svc.NodePort
	}
	r.pdb = rc.PodDisruptionBudget
	r.autoscaling = rc.Autoscaling
	r.ingress = rc.Ingress
	r.httpRoute = rc.HTTPRoute
	return r
}

// or returns v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// enabled reports whether an optional switch is on.
func enabled(b *bool) bool { return b != nil && *b }
