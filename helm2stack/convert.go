// Package helm2stack converts the values of the vLLM production-stack Helm
// chart (vllm-stack 0.1.12) into a ProductionStack: every key the "Coming
// from the Helm chart" table of docs/helm.md maps becomes its field (see
// table.go, one entry per key), a key the stack does not support is reported
// with the table's reason, and literal secrets become Secret references.
package helm2stack

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// ChartVersion is the chart release whose values the converter reads.
const ChartVersion = "0.1.12"

// converter holds the stack while the values are walked.
type converter struct {
	opts Options
	res  *Result
	raw  map[string]any

	spec v1alpha1.ProductionStackSpec // stack-wide blocks and the top-level engine defaults
	// models are the enabled entries of servingEngineSpec.modelSpec, in order.
	models []*modelState
	// cur is the model whose keys are being walked; nil outside modelSpec.
	cur *modelState
	// apiKeyFrom is the values key routerConfig.apiKeySecret came from.
	apiKeyFrom string
	// Images are completed with the chart's defaults at the end.
	routerImage, serverImage image
	// adapters are loraAdapters items, added to their models at the end.
	adapters []loraAdapter
	// mergedInto maps the names of the P/D recipe's two models to the
	// disaggregated model they became, for adapters that name either.
	mergedInto map[string]string
}

type modelState struct {
	path   string // servingEngineSpec.modelSpec[i]
	name   string
	fields map[string]node
	m      v1alpha1.ModelEngine
	// image is vllmConfig.image; initContainer is completed once all the
	// model's keys are read.
	image         image
	initContainer *corev1.Container
	// vllmConfig.extraArgs, in the chart's order: --runner, --convert,
	// extraArgs.
	runner, convert, extraArgs []string
	// existingClaim is pvcExistingClaimName, which needs pvcStorage.
	existingClaim string
	// pd is what the model says of the chart's P/D recipe (pd.go).
	pd pdModel
	// ray is what it says of raySpec (ray.go).
	ray rayModel
}

// maxReleaseName is the longest release name Helm accepts.
const maxReleaseName = 53

// Convert turns a values file of the chart into a ProductionStack. An error
// (not YAML, a key of the wrong type, a key the chart does not have) names
// the key by its full path, e.g. servingEngineSpec.modelSpec[1].replicaCount,
// and returns no stack.
func Convert(values []byte, opts Options) (*Result, error) {
	if opts.Name == "" {
		return nil, errors.New("the stack needs a name (the chart's release name)")
	}
	// Helm's own limit for release names: the model cache volume S-storage,
	// which the converter writes into init containers' mounts, then fits
	// Kubernetes' 63 characters as it is, so it is the name the function
	// gives the volume (it shortens longer ones).
	if msgs := validation.IsDNS1123Label(opts.Name); len(msgs) > 0 || len(opts.Name) > maxReleaseName {
		return nil, fmt.Errorf("the stack name %q is not a Helm release name: use at most %d lower case letters, digits and '-', starting and ending with a letter or digit", opts.Name, maxReleaseName)
	}
	raw, err := parseValues(values)
	if err != nil {
		return nil, err
	}
	c := &converter{opts: opts, raw: raw, res: &Result{}}
	if err := c.walk("", node{v: raw}); err != nil {
		return nil, err
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c.res, nil
}

// walk converts the keys of map n, whose keys match pattern+"."+key in the
// table; a map with no entry of its own but entries below is walked into.
func (c *converter) walk(pattern string, n node) error {
	fields, err := n.fields()
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		child := fields[k]
		p := joinKey(pattern, k)
		if r, ok := rules[p]; ok {
			if err := r.do(c, child); err != nil {
				return err
			}
			continue
		}
		if !hasRulesUnder(p) {
			return fmt.Errorf("unknown key %s: the chart (vllm-stack %s) has no such key; check its spelling against the chart's values.yaml", child.path, ChartVersion)
		}
		if child.v == nil {
			continue
		}
		if err := c.walk(p, child); err != nil {
			return err
		}
	}
	return nil
}

func joinKey(pattern, k string) string {
	if pattern == "" {
		return k
	}
	return pattern + "." + k
}

// eachItem visits every item of list n.
func (c *converter) eachItem(n node, visit func(item node) error) error {
	if n.v == nil {
		return nil
	}
	l, ok := n.v.([]any)
	if !ok {
		return n.wrongType("a list")
	}
	for i, e := range l {
		if err := visit(n.item(i, e)); err != nil {
			return err
		}
	}
	return nil
}

// modelSpecs converts servingEngineSpec.modelSpec, one models[] item per
// enabled entry.
func (c *converter) modelSpecs(n node) error {
	return c.eachItem(n, func(item node) error {
		fields, err := item.fields()
		if err != nil {
			return err
		}
		nameNode, ok := fields["name"]
		if !ok {
			return fmt.Errorf("%s.name is required: objects are named after the model", item.path)
		}
		name, err := nameNode.str()
		if err != nil {
			return err
		}
		if name == "" {
			return fmt.Errorf("%s.name is required: objects are named after the model", item.path)
		}
		for _, m := range c.models {
			if m.name == name {
				return fmt.Errorf("%s.name %q is also the name of %s: model names must be unique", item.path, name, m.path)
			}
		}
		if e, ok := fields["enabled"]; ok {
			if on, err := e.boolean(); err != nil {
				return err
			} else if !on {
				// The chart renders nothing of it (its own values.yaml has
				// such an example model, with keys of the wrong shape).
				c.res.note(item.path, fmt.Sprintf("model %s is disabled (enabled: false): left out of the stack, its keys unread", name))
				return nil
			}
		}
		c.cur = &modelState{path: item.path, name: name, fields: fields}
		defer func() { c.cur = nil }()
		if err := c.walk("servingEngineSpec.modelSpec[]", item); err != nil {
			return err
		}
		if err := c.completeModel(); err != nil {
			return err
		}
		c.models = append(c.models, c.cur)
		return nil
	})
}

// engine is the engine block keys write to: the current model's, or the
// top level's outside modelSpec.
func (c *converter) engine() *v1alpha1.EngineConfig {
	if c.cur != nil {
		return &c.cur.m.EngineConfig
	}
	return &c.spec.EngineConfig
}

func (c *converter) model() *v1alpha1.Model { return &c.cur.m.Model }

func (c *converter) router() *v1alpha1.RouterConfig { return ensure(&c.spec.RouterConfig) }

// server is the stack's LMCache cache server (cacheserverSpec).
func (c *converter) server() *v1alpha1.LMCacheServer {
	return ensure(&ensure(&c.spec.LMCacheConfig).Server)
}

// monitor is the ServiceMonitors' setting, shared by engines and router.
func (c *converter) monitor() *v1alpha1.ServiceMonitor {
	return ensure(&ensure(&c.spec.Monitoring).ServiceMonitor)
}

// lookup returns the value at a dotted path of the values file (no list
// items), or a node with a nil value.
func (c *converter) lookup(path string) node {
	var v any = c.raw
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return node{path: path}
		}
		v = m[k]
	}
	return node{path: path, v: v}
}

// routingLogic is routerSpec.routingLogic, or the chart's default.
func (c *converter) routingLogic() string {
	if s, ok := c.lookup("routerSpec.routingLogic").v.(string); ok && s != "" {
		return s
	}
	return "roundrobin"
}

func (c *converter) finish() error {
	if err := c.disaggregate(); err != nil {
		return err
	}
	if err := c.completeStack(); err != nil {
		return err
	}
	if len(c.models) == 0 {
		return errors.New("servingEngineSpec.modelSpec has no enabled model: a stack serves at least one model")
	}
	spec := c.spec
	if len(c.models) == 1 {
		m := c.models[0]
		model := m.m.Model
		spec.Model = &model
		merged, err := overlayEngine(spec.EngineConfig, m.m.EngineConfig)
		if err != nil {
			return err
		}
		spec.EngineConfig = merged
	} else {
		for _, m := range c.models {
			spec.Models = append(spec.Models, m.m)
		}
	}
	c.res.Stack = &v1alpha1.ProductionStack{
		TypeMeta:   metav1.TypeMeta{APIVersion: "serving.vllm.ai/v1alpha1", Kind: "ProductionStack"},
		ObjectMeta: metav1.ObjectMeta{Name: c.opts.Name, Namespace: c.opts.Namespace},
		Spec:       spec,
	}
	if err := c.check(); err != nil {
		return err
	}
	slices.SortStableFunc(c.res.Dropped, byKey)
	slices.SortStableFunc(c.res.Notes, byKey)
	return nil
}

func byKey(a, b Finding) int { return strings.Compare(a.Key, b.Key) }

// secret records that the stack reads key of Secret S-secrets (the chart's
// Secret name) where the values held a literal, and returns the reference.
func (c *converter) secret(key, from string) *v1alpha1.SecretKeySelector {
	name := c.opts.Name + "-secrets"
	c.res.Secrets = append(c.res.Secrets, Secret{Name: name, Key: key, From: from})
	return &v1alpha1.SecretKeySelector{Name: name, Key: key}
}
