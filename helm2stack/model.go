package helm2stack

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of the table longer than a line (the rest of the table is in
// table.go): images and what completes a model and the stack.

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
	c.completeRay()
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
	if args := c.liftShutdownTimeout(m.path, c.liftServedName(m.path, slices.Concat(m.runner, m.convert, m.extraArgs))); len(args) > 0 {
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
