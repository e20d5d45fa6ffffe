package helm2stack

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of the table longer than a line, in the table's order.

// image is a repository and tag, given by two keys.
type image struct{ repo, tag string }

// imagePart sets the repository or the tag (by the key's name) of an image.
func imagePart(of func(c *converter) *image) func(*converter, node) error {
	return func(c *converter, n node) error {
		s, err := n.scalar()
		if strings.HasSuffix(n.path, ".tag") {
			of(c).tag = s
		} else {
			of(c).repo = s
		}
		return err
	}
}

// orDefault fills what the values leave out with the chart's default.
func (i image) orDefault(repo, tag string) image {
	return image{cmp.Or(i.repo, repo), cmp.Or(i.tag, tag)}
}

func (i image) String() string { return i.repo + ":" + i.tag }

// releaseTag is a tag naming a release (v0.9.2, 0.1.12): the function
// reads the engine's or router's version from it.
var releaseTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// completeModel finishes what needs all of a model's keys.
func (c *converter) completeModel() error {
	m := c.cur
	if m.image.repo == "" || m.image.tag == "" {
		return fmt.Errorf("%s.repository and %s.tag are required (the chart refuses a model without them)", m.path, m.path)
	}
	ensure(&c.engine().VLLMConfig).Image = m.image.String()
	if m.image.repo != "vllm/vllm-openai" || !releaseTag.MatchString(m.image.tag) {
		c.res.note(m.path+".tag", fmt.Sprintf("the image %s does not say which vLLM it runs: set vllmConfig.engineVersion to that release, or the function spells arguments for the newest it knows", m.image))
	}
	if _, ok := m.fields["pvcStorage"]; !ok {
		ensure(&c.engine().Storage).Enabled = ptr.To(false)
		c.res.note(m.path, "no pvcStorage: storage.enabled false, as the chart mounts no model cache without it (leave storage out to get the stack's 50Gi cache at /data)")
	}
	// The chart's runtimeClassName is the model's when it has the key, even
	// "" (none), else servingEngineSpec's.
	if _, own := m.fields["runtimeClassName"]; !own {
		if rc, _ := c.lookup("servingEngineSpec.runtimeClassName").v.(string); rc != "" {
			ensure(&c.engine().Scheduling).RuntimeClassName = rc
		}
	}
	if a := c.engine().Autoscaling; a != nil && (a.Enabled == nil || !*a.Enabled) {
		c.engine().Autoscaling = nil // the chart makes a ScaledObject only with keda.enabled
	} else if a != nil {
		a.Enabled = nil
		if a.PrometheusAddress == "" {
			// The chart's default trigger.
			a.PrometheusAddress = "http://prometheus-operated.monitoring.svc:9090"
			c.res.note(m.path+".keda", "no Prometheus trigger: the chart's default server http://prometheus-operated.monitoring.svc:9090, with the stack's default query on vllm:num_requests_waiting of the model and threshold 5")
		}
	}
	if p := c.engine().PodDisruptionBudget; p != nil && (p.Enabled == nil || !*p.Enabled) {
		c.engine().PodDisruptionBudget = nil // the chart makes a PDB only with pdb.enabled
	} else if p != nil {
		p.Enabled = nil
		if p.MinAvailable == nil && p.MaxUnavailable == nil {
			c.res.note(m.path+".pdb", "neither minAvailable nor maxUnavailable: the stack's default is maxUnavailable 1 (the chart's minAvailable 0)")
		}
	}
	if ic := m.initContainer; ic != nil {
		ic.EnvFrom = append(ic.EnvFrom, c.engine().EnvFrom...) // envFromSecret's, as the chart's
		ensure(&c.engine().Pod).InitContainers = []corev1.Container{*ic}
	}
	c.existingClaim()
	if args := slices.Concat(m.runner, m.convert, m.extraArgs); len(args) > 0 {
		ensure(&c.engine().VLLMConfig).ExtraArgs = args
	}
	return nil
}

// keepShared prepends the top level's entries of the lists the chart adds
// to a model's own (envFrom of configs, the shared claim's volume and
// mount), since a model's list replaces the top level's.
func (c *converter) keepShared() {
	top := &c.spec.EngineConfig
	for _, m := range c.models {
		e := &m.m.EngineConfig
		if len(e.EnvFrom) > 0 {
			e.EnvFrom = slices.Concat(top.EnvFrom, e.EnvFrom)
		}
		if e.Storage == nil || top.Storage == nil {
			continue
		}
		if len(e.Storage.ExtraVolumes) > 0 {
			e.Storage.ExtraVolumes = slices.Concat(top.Storage.ExtraVolumes, e.Storage.ExtraVolumes)
		}
		if len(e.Storage.ExtraVolumeMounts) > 0 {
			e.Storage.ExtraVolumeMounts = slices.Concat(top.Storage.ExtraVolumeMounts, e.Storage.ExtraVolumeMounts)
		}
	}
}

// completeStack finishes what needs all the values: images with the
// chart's defaults, LoRA adapters on their models.
func (c *converter) completeStack() error {
	if c.routerImage != (image{}) {
		img := c.routerImage.orDefault("lmcache/lmstack-router", "latest")
		c.router().Image = img.String()
		if !releaseTag.MatchString(img.tag) {
			c.res.note("routerSpec.tag", fmt.Sprintf("the router image %s does not say which release it runs: set routerConfig.routerVersion, or the function assumes the newest it knows", img))
		}
	}
	ownClass := func(m *modelState) bool { _, ok := m.fields["runtimeClassName"]; return ok }
	if c.lookup("servingEngineSpec.runtimeClassName").v == nil && !all(c.models, ownClass) {
		c.res.note("servingEngineSpec.runtimeClassName", "unset: the chart's default, nvidia, is not applied (the stack sets no runtime class unless asked); set scheduling.runtimeClassName: nvidia if the GPU nodes need it")
	}
	if c.serverImage != (image{}) {
		c.server().Image = c.serverImage.orDefault("lmcache/vllm-openai", "latest").String()
	}
	if s := c.spec.LMCacheConfig; s != nil && s.Server != nil {
		if s.Server.Enabled == nil || !*s.Server.Enabled {
			s.Server = nil // the chart runs a cache server only with enabled: true
		} else {
			s.Server.Enabled = nil
		}
	}
	if c.spec.LMCacheConfig != nil && *c.spec.LMCacheConfig == (v1alpha1.LMCacheConfig{}) {
		c.spec.LMCacheConfig = nil
	}
	if r := c.spec.RouterConfig; r != nil {
		if p := r.PodDisruptionBudget; p != nil && (p.Enabled == nil || !*p.Enabled) {
			r.PodDisruptionBudget = nil
		} else if p != nil {
			p.Enabled = nil
		}
		if a := r.Autoscaling; a != nil && (a.Enabled == nil || !*a.Enabled) {
			r.Autoscaling = nil
		} else if a != nil {
			a.Enabled = nil
		}
	}
	c.keepShared()
	return c.addAdapters()
}

func all[T any](l []T, f func(T) bool) bool {
	return !slices.ContainsFunc(l, func(e T) bool { return !f(e) })
}

// pvcStorage is the claim's size, or {emptyDir: {...}} for an emptyDir.
func (c *converter) pvcStorage(n node) error {
	if m, ok := n.v.(map[string]any); ok {
		var v struct {
			EmptyDir *struct {
				SizeLimit string `json:"sizeLimit,omitempty"`
				Medium    string `json:"medium,omitempty"`
			} `json:"emptyDir"`
		}
		if err := n.object(&v); err != nil {
			return err
		}
		if v.EmptyDir == nil {
			return fmt.Errorf("%s must be a size such as 50Gi or {emptyDir: {sizeLimit: ...}}, got a map with %d other keys", n.path, len(m))
		}
		ensure(&c.engine().Storage).EmptyDir = &v1alpha1.EmptyDirStorage{SizeLimit: v.EmptyDir.SizeLimit}
		if v.EmptyDir.Medium != "" {
			c.res.drop(n.path+".emptyDir.medium", "not supported: the model cache emptyDir is on the node's disk")
		}
		return nil
	}
	s, err := n.scalar()
	if err == nil && s != "" {
		ensure(&c.engine().Storage).Size = s
	}
	return err
}

// storageClass is the claim's class, "" included: the chart sets
// storageClassName whenever the key is there, and "" binds a volume of no
// class.
func (c *converter) storageClass(n node) error {
	if n.v == nil {
		return nil
	}
	s, err := n.str()
	if err == nil {
		ensure(&c.engine().Storage).StorageClassName = &s
	}
	return err
}

// existingClaim: the chart (HEAD) mounts pvcExistingClaimName in place of
// the claim it would make for a pvcStorage size, and makes none; without a
// size (no pvcStorage, or an emptyDir) it ignores the key.
func (c *converter) existingClaim() {
	m := c.cur
	if m.existingClaim == "" {
		return
	}
	st := c.engine().Storage
	if st == nil || st.Size == "" {
		c.res.note(m.path+".pvcExistingClaimName", "ignored, as by the chart: it mounts an existing claim only in place of the claim of a pvcStorage size")
		return
	}
	if st.StorageClassName != nil || st.AccessModes != nil {
		c.res.note(m.path+".pvcExistingClaimName", "storageClass and pvcAccessMode are left out, as the chart makes no claim for an existing one")
	}
	st.ExistingClaimName = m.existingClaim
	st.Size, st.StorageClassName, st.AccessModes = "", nil, nil
}

// sharedStorage mounts the chart's shared claim into every model.
func (c *converter) sharedStorage(n node) error {
	var v struct {
		Enabled      bool     `json:"enabled"`
		Size         string   `json:"size"`
		AccessModes  []string `json:"accessModes"`
		StorageClass string   `json:"storageClass"`
		HostPath     string   `json:"hostPath"`
		NFS          struct {
			Server string `json:"server"`
			Path   string `json:"path"`
		} `json:"nfs"`
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if n.v == nil {
		return nil
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	volume, claim := c.opts.Name+"-shared-pvc-storage", c.opts.Name+"-shared-pvc-storage-claim"
	// The chart's volume name, which the chart itself renders invalid for
	// release names over 44 characters.
	if len(volume) > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("%s: the chart's volume name %s is over %d characters, which Kubernetes refuses: use a stack name (--name) of at most %d characters",
			n.path, volume, validation.DNS1123LabelMaxLength, validation.DNS1123LabelMaxLength-len("-shared-pvc-storage"))
	}
	st := ensure(&c.spec.EngineConfig.Storage)
	st.ExtraVolumes = append(st.ExtraVolumes, corev1.Volume{Name: volume,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	st.ExtraVolumeMounts = append(st.ExtraVolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/data/shared-pvc-storage"})
	setEnv(&c.spec.Env, corev1.EnvVar{Name: "HF_HOME", Value: "/data/shared-pvc-storage"})
	c.res.note(n.path, fmt.Sprintf("the stack mounts claim %s at /data/shared-pvc-storage (HF_HOME) in every model but does not create it: create a ReadWriteMany claim of size %s (and its volume, for hostPath or NFS) before applying the stack", claim, cmp.Or(v.Size, "100Gi")))
	return nil
}

// initContainer becomes pod.initContainers; the chart's env RELEASE_NAME
// and LMCACHE_SERVER_SERVICE_PORT are kept, since its commands use them.
func (c *converter) initContainer(n node) error {
	if n.empty() {
		return nil
	}
	var v struct {
		Name              string                      `json:"name"`
		Image             string                      `json:"image"`
		Command           []string                    `json:"command"`
		Args              []string                    `json:"args"`
		Env               []corev1.EnvVar             `json:"env"`
		Resources         corev1.ResourceRequirements `json:"resources"`
		MountPvcStorage   bool                        `json:"mountPvcStorage"`
		ExtraVolumeMounts []corev1.VolumeMount        `json:"extraVolumeMounts"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if v.Name == "" || v.Image == "" {
		return fmt.Errorf("%s needs a name and an image", n.path)
	}
	ic := &corev1.Container{Name: v.Name, Image: v.Image, Command: v.Command, Args: v.Args, Resources: v.Resources}
	ic.Env = []corev1.EnvVar{{Name: "RELEASE_NAME", Value: c.opts.Name}}
	if b, _ := c.lookup("cacheserverSpec.enabled").v.(bool); b {
		ic.Env = append(ic.Env, corev1.EnvVar{Name: "LMCACHE_SERVER_SERVICE_PORT", Value: "80"})
	}
	ic.Env = append(ic.Env, v.Env...)
	if _, ok := c.cur.fields["pvcStorage"]; ok && v.MountPvcStorage {
		// The model cache volume, named as the chart's (and the stack's).
		ic.VolumeMounts = append(ic.VolumeMounts, corev1.VolumeMount{Name: c.opts.Name + "-storage", MountPath: "/data"})
	}
	ic.VolumeMounts = append(ic.VolumeMounts, v.ExtraVolumeMounts...)
	c.cur.initContainer = ic
	return nil
}

// kvawareDerived: the engines' controller settings follow
// routerConfig.routerType kvaware and the router's ports.
func (c *converter) kvawareDerived(n node) error {
	if _, err := n.scalar(); err != nil && n.v != nil {
		if _, berr := n.boolean(); berr != nil {
			return n.wrongType("a boolean, a number or a string")
		}
	}
	if c.routingLogic() != "kvaware" {
		if !n.empty() {
			c.res.drop(n.path, "derived from routerConfig.routerType kvaware (routerSpec.routingLogic), which is not set")
		}
		return nil
	}
	if strings.HasSuffix(n.path, ".controllerPort") {
		if s, _ := n.scalar(); s != "" && s != fmt.Sprint(ptr.Deref(c.router().LMCacheControllerPort, 9000)) {
			c.res.note(n.path, fmt.Sprintf("the engines' LMCACHE_CONTROLLER_PULL_URL follows routerConfig.lmcacheControllerPort (%d), not %s", ptr.Deref(c.router().LMCacheControllerPort, 9000), s))
		}
	}
	return nil
}

// controllerReplyPort is one setting of the router and every engine.
func (c *converter) controllerReplyPort(n node) error {
	if n.v == nil || n.v == "" {
		return nil
	}
	v, err := n.int32()
	if err != nil {
		return err
	}
	if c.routingLogic() != "kvaware" {
		c.res.drop(n.path, "derived from routerConfig.routerType kvaware (routerSpec.routingLogic), which is not set")
		return nil
	}
	r := c.router()
	switch {
	case r.LMCacheControllerReplyPort == nil:
		r.LMCacheControllerReplyPort = &v
	case *r.LMCacheControllerReplyPort != v:
		c.res.note(n.path, fmt.Sprintf("routerConfig.lmcacheControllerReplyPort is %d for the router and every engine, not %d", *r.LMCacheControllerReplyPort, v))
	}
	return nil
}

// workerPorts is "8001" or "8001,8002": worker i listens on workerPort+i.
func (c *converter) workerPorts(n node) error {
	s, err := n.scalar()
	if err != nil || s == "" {
		return err
	}
	first := strings.TrimSpace(strings.Split(s, ",")[0])
	v, err := node{path: n.path, v: first}.int32()
	if err != nil {
		return err
	}
	ensure(&c.engine().LMCacheConfig).WorkerPort = &v
	if strings.Contains(s, ",") {
		c.res.note(n.path, fmt.Sprintf("lmcacheConfig.workerPort %d: the stack gives tensor-parallel worker i the port %d+i", v, v))
	}
	return nil
}

// envVar sets the engine variable name from a scalar key.
func envVar(name string) func(*converter, node) error {
	return scalar(func(c *converter, s string) { setEnv(&c.engine().Env, corev1.EnvVar{Name: name, Value: s}) })
}

// secretRef reads the chart's {secretName, secretKey}; ok is false when
// both are empty (the chart's default).
func secretRef(n node) (sel *v1alpha1.SecretKeySelector, err error) {
	var v struct {
		SecretName string `json:"secretName"`
		SecretKey  string `json:"secretKey"`
	}
	if err := n.object(&v); err != nil {
		return nil, err
	}
	switch {
	case v.SecretName == "" && v.SecretKey == "":
		return nil, nil
	case v.SecretName == "":
		return nil, fmt.Errorf("%s.secretName is required with secretKey", n.path)
	case v.SecretKey == "":
		return nil, fmt.Errorf("%s.secretKey is required with secretName", n.path)
	}
	return &v1alpha1.SecretKeySelector{Name: v.SecretName, Key: v.SecretKey}, nil
}

// secretOrLiteral is a Secret reference from {secretName, secretKey}, or
// for a literal the key of the stack's Secret S-secrets to put it in.
func (c *converter) secretOrLiteral(n node, key string) (*v1alpha1.SecretKeySelector, error) {
	switch n.v.(type) {
	case nil:
		return nil, nil
	case string:
		if n.v == "" {
			return nil, nil
		}
		return c.secret(key, n.path), nil
	case map[string]any:
		return secretRef(n)
	}
	return nil, n.wrongType("a string or {secretName, secretKey}")
}

// hfToken: HF_TOKEN from a Secret, never a literal.
func (c *converter) hfToken(n node) error {
	sel, err := c.secretOrLiteral(n, "hf_token_"+c.cur.name)
	if sel != nil {
		ensure(&c.engine().VLLMConfig).HFTokenSecret = sel
	}
	return err
}

// engineAPIKey: VLLM_API_KEY of the router and every engine.
func (c *converter) engineAPIKey(n node) error {
	sel, err := c.secretOrLiteral(n, "vllmApiKey")
	if sel == nil || err != nil {
		return err
	}
	if r := c.router().APIKeySecret; r != nil {
		if *r != *sel {
			c.res.note(n.path, fmt.Sprintf("the stack has one API key Secret, %s's (%s/%s), for the router and every engine", c.apiKeyFrom, r.Name, r.Key))
		}
		return nil
	}
	c.router().APIKeySecret, c.apiKeyFrom = sel, n.path
	return nil
}

// routerAPIKey wins for the router, as in the chart; the stack's engines
// share it.
func (c *converter) routerAPIKey(n node) error {
	if n.v == nil {
		return nil
	}
	if _, ok := n.v.(map[string]any); !ok {
		return n.wrongType("{secretName, secretKey} (the chart takes a literal key in servingEngineSpec.vllmApiKey only)")
	}
	sel, err := secretRef(n)
	if sel != nil {
		c.router().APIKeySecret, c.apiKeyFrom = sel, n.path
	}
	return err
}

// routerHFToken: the router's HF_TOKEN from the stack's Secret.
func (c *converter) routerHFToken(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	sel := c.secret("router_hf_token", n.path)
	setEnv(&c.router().Env, corev1.EnvVar{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: sel.Name}, Key: sel.Key}}})
	return nil
}

func (c *converter) envFromSecret(n node) error {
	var v struct {
		Name string `json:"name"`
	}
	if n.empty() {
		return nil
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if v.Name == "" {
		return fmt.Errorf("%s.name is required", n.path)
	}
	c.engine().EnvFrom = append(c.engine().EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.Name}}})
	return nil
}

// configs: the chart makes ConfigMap S-configs from them; the stack reads
// an existing one.
func (c *converter) configs(n node) error {
	if n.empty() {
		return nil
	}
	m, err := n.stringMap()
	if err != nil {
		return err
	}
	name := c.opts.Name + "-configs"
	c.spec.EnvFrom = append(c.spec.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cmd := "kubectl create configmap " + name
	if c.opts.Namespace != "" {
		cmd += " --namespace " + c.opts.Namespace
	}
	for _, k := range keys {
		cmd += fmt.Sprintf(" --from-literal=%s='<the value of %s.%s>'", k, n.path, k)
	}
	c.res.note(n.path, "the stack reads ConfigMap "+name+" (envFrom) but does not create it: "+cmd)
	return nil
}

func mergeInto(dst *map[string]string, m map[string]string) {
	if *dst == nil {
		*dst = map[string]string{}
	}
	for k, v := range m {
		(*dst)[k] = v
	}
}

// modelTolerations: a model's list replaces the top level's, so "append"
// (the chart's default) repeats the shared tolerations in it.
func (c *converter) modelTolerations(n node) error {
	var own []corev1.Toleration
	if n.empty() {
		return nil
	}
	if err := n.object(&own); err != nil {
		return err
	}
	list := own
	if p, _ := c.cur.fields["tolerationsPolicy"].v.(string); p != "override" {
		var shared []corev1.Toleration
		if g := c.lookup("servingEngineSpec.tolerations"); !g.empty() {
			if err := g.object(&shared); err != nil {
				return err
			}
		}
		list = append(shared, own...)
	}
	ensure(&c.engine().Scheduling).Tolerations = list
	return nil
}

func (c *converter) tolerationsPolicy(n node) error {
	s, err := n.str()
	if err == nil && s != "" && s != "append" && s != "override" {
		return fmt.Errorf("%s must be append or override, got %q", n.path, s)
	}
	return err
}

// nodeSelectorTerms go under a required node affinity, unless affinity
// (or for engines nodeName) is set, which the chart lets win.
func nodeSelectorTerms(n node, affinity node, sched **v1alpha1.Scheduling) error {
	if n.empty() {
		return nil
	}
	var terms []corev1.NodeSelectorTerm
	if err := n.object(&terms); err != nil {
		return err
	}
	if !affinity.empty() {
		return nil
	}
	ensure(sched).Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	return nil
}

func (c *converter) engineNodeSelectorTerms(n node) error {
	if !c.cur.fields["nodeName"].empty() {
		return nil
	}
	return nodeSelectorTerms(n, c.cur.fields["affinity"], &c.engine().Scheduling)
}

func (c *converter) routerNodeSelectorTerms(n node) error {
	return nodeSelectorTerms(n, c.lookup("routerSpec.affinity"), &c.router().Scheduling)
}

// chatTemplate names the template file; its text is chatTemplateConfigMap.
func (c *converter) chatTemplate(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	if c.cur.fields["chatTemplateConfigMap"].empty() {
		c.res.drop(n.path, "model.chatTemplate is the template text: the chart reads this file from the claim vllm-templates-pvc, which the stack does not mount; put the text in chatTemplateConfigMap")
	}
	return nil
}

// kedaTriggers: one Prometheus trigger becomes prometheusAddress, query
// and threshold.
func (c *converter) kedaTriggers(n node) error {
	if n.empty() {
		return nil
	}
	var triggers []struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := n.object(&triggers); err != nil {
		return err
	}
	for i, t := range triggers {
		p := fmt.Sprintf("%s[%d]", n.path, i)
		if t.Type != "prometheus" || i > 0 {
			c.res.drop(p, "not supported: the ScaledObject has one Prometheus trigger (autoscaling.prometheusAddress, query, threshold)")
			continue
		}
		a := autoscalingOf(c.engine())
		for k, v := range t.Metadata {
			switch k {
			case "serverAddress":
				a.PrometheusAddress = v
			case "query":
				a.Query = v
			case "threshold":
				a.Threshold = v
			case "metricName":
			default:
				c.res.drop(p+".metadata."+k, "not supported: the trigger has serverAddress, query and threshold only")
			}
		}
	}
	return nil
}

// intOrString sets a PodDisruptionBudget bound: a number or a percentage.
func intOrString(budget func(c *converter) **v1alpha1.PodDisruptionBudget, minAvailable bool) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil || n.v == "" {
			return nil
		}
		var v intstr.IntOrString
		if s, ok := n.v.(string); ok {
			v = intstr.FromString(s)
		} else {
			i, err := n.int32()
			if err != nil {
				return n.wrongType("a number or a percentage")
			}
			v = intstr.FromInt32(i)
		}
		p := ensure(budget(c))
		if minAvailable {
			p.MinAvailable = &v
		} else {
			p.MaxUnavailable = &v
		}
		return nil
	}
}

func (c *converter) engineStrategy(n node) error {
	if n.empty() {
		return nil
	}
	var s appsv1.DeploymentStrategy
	if err := n.object(&s); err != nil {
		return err
	}
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		c.spec.DeploymentStrategy = string(s.Type)
	case appsv1.RollingUpdateDeploymentStrategyType, "":
		if r := s.RollingUpdate; r != nil {
			c.spec.RollingUpdate = &v1alpha1.RollingUpdate{MaxSurge: r.MaxSurge, MaxUnavailable: r.MaxUnavailable}
		}
	default:
		return fmt.Errorf("%s.type must be RollingUpdate or Recreate, got %q", n.path, s.Type)
	}
	return nil
}

// engineProbe: the timings carry over; the check stays GET /health on 8000.
func (c *converter) engineProbe(n node) error {
	if n.empty() {
		return nil
	}
	var p corev1.Probe
	if err := n.object(&p); err != nil {
		return err
	}
	t := &v1alpha1.Probe{}
	set := func(dst **int32, v int32) {
		if v != 0 {
			*dst = ptr.To(v)
		}
	}
	set(&t.InitialDelaySeconds, p.InitialDelaySeconds)
	set(&t.PeriodSeconds, p.PeriodSeconds)
	set(&t.TimeoutSeconds, p.TimeoutSeconds)
	set(&t.FailureThreshold, p.FailureThreshold)
	probes := ensure(&c.spec.EngineConfig.Probes)
	switch {
	case strings.HasSuffix(n.path, "startupProbe"):
		probes.Startup = t
	case strings.HasSuffix(n.path, "readinessProbe"):
		probes.Readiness = t
	default:
		probes.Liveness = t
	}
	const check = "the check stays GET /health on 8000"
	if h := p.HTTPGet; h != nil && ((h.Path != "" && h.Path != "/health") || (h.Port.String() != "0" && h.Port.String() != "8000") || h.Scheme != "" || len(h.HTTPHeaders) > 0 || h.Host != "") {
		c.res.drop(n.path+".httpGet", check)
	}
	if p.Exec != nil || p.TCPSocket != nil || p.GRPC != nil {
		c.res.drop(n.path, check)
	}
	if p.SuccessThreshold > 1 || p.TerminationGracePeriodSeconds != nil {
		c.res.drop(n.path, "only initialDelaySeconds, periodSeconds, timeoutSeconds and failureThreshold are settable")
	}
	return nil
}

// serviceMonitor: one setting makes the engines' and the router's.
func (c *converter) serviceMonitor(n node) error {
	if n.v == nil {
		return nil
	}
	var v struct {
		Enabled           bool              `json:"enabled"`
		AdditionalLabels  map[string]string `json:"additionalLabels"`
		Interval          string            `json:"interval"`
		ScrapeTimeout     string            `json:"scrapeTimeout"`
		HonorLabels       bool              `json:"honorLabels"`
		MetricRelabelings []any             `json:"metricRelabelings"`
		Relabelings       []any             `json:"relabelings"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	sm := c.monitor()
	if v.Interval != "" && v.Interval != "30s" {
		if sm.Interval != "" && sm.Interval != v.Interval {
			c.res.note(n.path+".interval", "one interval for the engines and the router: "+sm.Interval)
		} else {
			sm.Interval = v.Interval
		}
	}
	if len(v.AdditionalLabels) > 0 {
		mergeInto(&sm.Labels, v.AdditionalLabels)
	}
	const reason = "not supported: the ServiceMonitors take interval and labels only"
	if v.ScrapeTimeout != "" && v.ScrapeTimeout != "25s" {
		c.res.drop(n.path+".scrapeTimeout", reason)
	}
	if v.HonorLabels {
		c.res.drop(n.path+".honorLabels", reason)
	}
	if len(v.MetricRelabelings) > 0 {
		c.res.drop(n.path+".metricRelabelings", reason)
	}
	if len(v.Relabelings) > 0 {
		c.res.drop(n.path+".relabelings", reason)
	}
	other := "routerSpec.serviceMonitor.enabled"
	if strings.HasPrefix(n.path, "routerSpec") {
		other = "servingEngineSpec.serviceMonitor.enabled"
	}
	if b, _ := c.lookup(other).v.(bool); !b {
		c.res.note(n.path, "monitoring.serviceMonitor makes ServiceMonitors for both the engines and the router")
	}
	return nil
}

func (c *converter) routerPullSecrets(n node) error {
	var l []corev1.LocalObjectReference
	if n.empty() {
		return nil
	}
	if err := n.object(&l); err != nil {
		return err
	}
	c.router().ImagePullSecretName = l[0].Name
	for i := 1; i < len(l); i++ {
		c.res.drop(fmt.Sprintf("%s[%d]", n.path, i), "not supported: routerConfig.imagePullSecretName names one Secret")
	}
	return nil
}

func (c *converter) routerServiceType(n node) error {
	s, err := n.str()
	switch {
	case err != nil || s == "" || s == "ClusterIP":
	case s == "NodePort" || s == "LoadBalancer":
		ensure(&c.router().Service).Type = s
	default:
		c.res.drop(n.path, "not supported: the router Service is ClusterIP, NodePort or LoadBalancer")
	}
	return err
}

func (c *converter) routingLogicKey(n node) error {
	s, err := n.str()
	switch {
	case err != nil || s == "" || s == "roundrobin":
	case s == "session" || s == "prefixaware" || s == "kvaware":
		c.router().RouterType = s
	case s == "disaggregated_prefill":
		c.res.drop(n.path, pdReason+"; the stack routes roundrobin")
	default:
		// The router exits at start-up on a logic it does not know.
		return fmt.Errorf("%s must be one of roundrobin, session, prefixaware, kvaware, disaggregated_prefill, got %q", n.path, s)
	}
	return err
}

func (c *converter) prefixMinMatchLength(n node) error {
	if n.v == nil || n.v == "" {
		return nil
	}
	v, err := n.int32()
	if err != nil || v == 0 {
		return err
	}
	if c.routingLogic() != "prefixaware" {
		c.res.drop(n.path, "applies to routerType prefixaware only")
		return nil
	}
	c.router().PrefixMinMatchLength = &v
	return nil
}

// routerFlag appends flag and the key's value to routerConfig.extraArgs.
func routerFlag(flag string) func(*converter, node) error {
	return routerFlagUnless(flag, "")
}

// routerFlagUnless is routerFlag, except for the value the stack passes
// anyway.
func routerFlagUnless(flag, same string) func(*converter, node) error {
	return scalar(func(c *converter, s string) {
		if s != same && s != "0" {
			c.router().ExtraArgs = append(c.router().ExtraArgs, flag, s)
		}
	})
}

func (c *converter) otel(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	name, _ := c.lookup("routerSpec.otel.serviceName").v.(string)
	r := c.router()
	r.ExtraArgs = append(r.ExtraArgs, "--otel-endpoint", s, "--otel-service-name", cmp.Or(name, "vllm-router"))
	if b, _ := c.lookup("routerSpec.otel.secure").v.(bool); b {
		r.ExtraArgs = append(r.ExtraArgs, "--otel-secure")
	}
	return nil
}

// checkOnly checks the type of a key another key's conversion reads.
func checkOnly[T any](check func(node) (T, error)) func(*converter, node) error {
	return func(_ *converter, n node) error {
		if n.v == nil {
			return nil
		}
		_, err := check(n)
		return err
	}
}

func (c *converter) ingress(n node) error {
	if n.v == nil {
		return nil
	}
	var v struct {
		Enabled     bool              `json:"enabled"`
		ClassName   string            `json:"className"`
		Annotations map[string]string `json:"annotations"`
		Hosts       []struct {
			Host  string `json:"host"`
			Paths []struct {
				Path     string `json:"path"`
				PathType string `json:"pathType"`
			} `json:"paths"`
		} `json:"hosts"`
		TLS []struct {
			SecretName string   `json:"secretName"`
			Hosts      []string `json:"hosts"`
		} `json:"tls"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	in := &v1alpha1.Ingress{ClassName: v.ClassName, Annotations: v.Annotations}
	const one = "not supported: routerConfig.ingress has one host, one path (a Prefix) and one TLS Secret"
	for i, h := range v.Hosts {
		if i > 0 {
			c.res.drop(fmt.Sprintf("%s.hosts[%d]", n.path, i), one)
			continue
		}
		in.Host = h.Host
		for j, p := range h.Paths {
			if j > 0 || (p.PathType != "" && p.PathType != "Prefix") {
				c.res.drop(fmt.Sprintf("%s.hosts[%d].paths[%d]", n.path, i, j), one)
				continue
			}
			if p.Path != "/" {
				in.Path = p.Path
			}
		}
	}
	for i, t := range v.TLS {
		if i > 0 {
			c.res.drop(fmt.Sprintf("%s.tls[%d]", n.path, i), one)
			continue
		}
		in.TLSSecretName = t.SecretName
	}
	c.router().Ingress = in
	return nil
}

// routes: the first enabled route (by name) that is not an HTTPS redirect
// becomes routerConfig.httpRoute.
func (c *converter) routes(n node) error {
	fields, err := n.fields()
	if err != nil || n.v == nil {
		return err
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	const one = "not supported: routerConfig.httpRoute is one HTTPRoute with parentRefs, hostnames and a path prefix"
	for _, name := range names {
		f := fields[name]
		var v struct {
			Enabled     bool              `json:"enabled"`
			APIVersion  string            `json:"apiVersion"`
			Kind        string            `json:"kind"`
			Annotations map[string]string `json:"annotations"`
			Labels      map[string]string `json:"labels"`
			Hostnames   []string          `json:"hostnames"`
			ParentRefs  []struct {
				Name        string `json:"name"`
				Namespace   string `json:"namespace"`
				SectionName string `json:"sectionName"`
				Group       string `json:"group"`
				Kind        string `json:"kind"`
				Port        *int32 `json:"port"`
			} `json:"parentRefs"`
			HTTPSRedirect bool `json:"httpsRedirect"`
			Matches       []struct {
				Path struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path"`
			} `json:"matches"`
			Filters         []any `json:"filters"`
			AdditionalRules []any `json:"additionalRules"`
		}
		if err := f.object(&v); err != nil {
			return err
		}
		if !v.Enabled {
			continue
		}
		if c.router().HTTPRoute != nil || v.HTTPSRedirect || (v.Kind != "" && v.Kind != "HTTPRoute") ||
			len(v.Filters) > 0 || len(v.AdditionalRules) > 0 || len(v.Annotations) > 0 || len(v.Labels) > 0 {
			c.res.drop(f.path, one)
			continue
		}
		r := &v1alpha1.HTTPRoute{Hostnames: v.Hostnames}
		for _, p := range v.ParentRefs {
			r.ParentRefs = append(r.ParentRefs, v1alpha1.ParentRef{Name: p.Name, Namespace: p.Namespace, SectionName: p.SectionName})
		}
		for i, m := range v.Matches {
			if i > 0 || (m.Path.Type != "" && m.Path.Type != "PathPrefix") {
				c.res.drop(fmt.Sprintf("%s.matches[%d]", f.path, i), one)
				continue
			}
			if m.Path.Value != "/" {
				r.Path = m.Path.Value
			}
		}
		c.router().HTTPRoute = r
	}
	return nil
}

// loraAdapter is a loraAdapters item: a LoraAdapter object of the LoRA
// controller in the chart, an adapter loaded at start-up here.
type loraAdapter struct {
	path      string
	baseModel string
	adapter   v1alpha1.LoRAAdapter
}

func (c *converter) loraAdapters(n node) error {
	return c.eachItem(n, func(item node) error {
		var v struct {
			Name          string            `json:"name"`
			Enabled       *bool             `json:"enabled"`
			Labels        map[string]string `json:"labels"`
			BaseModel     string            `json:"baseModel"`
			VLLMAPIKey    any               `json:"vllmApiKey"`
			AdapterSource struct {
				Type        string `json:"type"`
				AdapterName string `json:"adapterName"`
				AdapterPath string `json:"adapterPath"`
				Repository  string `json:"repository"`
				Pattern     string `json:"pattern"`
				MaxAdapters *int32 `json:"maxAdapters"`
				Credentials any    `json:"credentials"`
			} `json:"adapterSource"`
			DeploymentConfig *struct {
				Algorithm string            `json:"algorithm"`
				Replicas  *int32            `json:"replicas"`
				Labels    map[string]string `json:"labels"`
			} `json:"loraAdapterDeploymentConfig"`
		}
		if err := item.object(&v); err != nil {
			return err
		}
		if v.Enabled != nil && !*v.Enabled {
			return nil
		}
		src := v.AdapterSource
		a := loraAdapter{path: item.path, baseModel: v.BaseModel, adapter: v1alpha1.LoRAAdapter{Name: cmp.Or(src.AdapterName, v.Name)}}
		switch src.Type {
		case "local":
			a.adapter.Path = src.AdapterPath
		case "huggingface":
			a.adapter.Path = src.Repository
		default:
			c.res.drop(item.path, "not supported: adapters loaded at start-up (model.loraAdapters) come from a local path or Hugging Face; LoraAdapter objects of other sources need the LoRA controller")
			return nil
		}
		if a.adapter.Path == "" || a.adapter.Name == "" {
			return fmt.Errorf("%s.adapterSource needs adapterName and, for type %s, %s", item.path, src.Type, map[string]string{"local": "adapterPath", "huggingface": "repository"}[src.Type])
		}
		if src.Credentials != nil || v.VLLMAPIKey != nil || v.DeploymentConfig != nil || len(v.Labels) > 0 || src.Pattern != "" || src.MaxAdapters != nil {
			c.res.note(item.path, "loaded at start-up by every replica (--lora-modules); the LoRA controller's placement, credentials, pattern, API key and LoraAdapter labels do not apply")
		}
		c.adapters = append(c.adapters, a)
		return nil
	})
}

func (c *converter) addAdapters() error {
	for _, a := range c.adapters {
		var target *modelState
		for _, m := range c.models {
			if m.name == a.baseModel {
				target = m
			}
		}
		switch {
		case target == nil:
			c.res.drop(a.path, fmt.Sprintf("its baseModel %q is no enabled model of servingEngineSpec.modelSpec", a.baseModel))
		case !target.m.EnableLoRA:
			c.res.drop(a.path, fmt.Sprintf("model %s has no enableLoRA: adapters need it", a.baseModel))
		default:
			target.m.LoRAAdapters = append(target.m.LoRAAdapters, a.adapter)
		}
	}
	return nil
}

// dropEnabled reports a block of the chart the stack does not include when
// its switch is on.
func dropEnabled(key, reason string) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil {
			return nil
		}
		f, err := n.fields()
		if err != nil {
			return err
		}
		if b, _ := f[key].v.(bool); b {
			c.res.drop(n.path, reason)
		}
		return nil
	}
}

// workerHeartbeatTime keeps an interval the stack accepts. The chart's
// kvaware tutorial sets 30, the controller's own timeout, where a late
// heartbeat deregisters the engine: that is dropped (the stack's default,
// 10 s, applies) and reported, rather than written into a stack the
// function would refuse.
func (c *converter) workerHeartbeatTime(n node) error {
	return integer(func(c *converter, v *int32) {
		if *v < 1 || *v > v1alpha1.MaxWorkerHeartbeatTime {
			c.res.drop(n.path, fmt.Sprintf("%d s is not below the router's 30 s worker timeout, so an engine would be dropped whenever a heartbeat is late: "+
				"the stack's default 10 s applies (lmcacheConfig.workerHeartbeatTime takes 1 to %d)", *v, v1alpha1.MaxWorkerHeartbeatTime))
			return
		}
		ensure(&c.engine().LMCacheConfig).WorkerHeartbeatTime = v
	})(c, n)
}
