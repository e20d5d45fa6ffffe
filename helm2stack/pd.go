package helm2stack

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// The chart's disaggregated prefill recipe (tutorial 16): two models of the
// same weights, one with lmcacheConfig.enablePD and kvRole kv_producer (or
// nixlRole sender), one with kv_consumer (receiver), behind the router's
// disaggregated_prefill logic, which the router's extraArgs point at the two
// models' labels. It moves the KV cache with LMCache's NIXL backend under
// the LMCACHE_NIXL_* names of mid-2025 LMCache. The converter makes of it
// one model with disaggregation: with transfer lmcache, the recipe itself,
// where the engines' image carries that LMCache (the tutorial's does);
// otherwise with transfer nixl, vLLM's NixlConnector behind
// disaggregated_prefill_orchestrated, since later LMCache no longer reads
// those names and its sender learns its receiver from a request field no
// router release sends (stack/testdata/upstream/disagg.tsv).

// pdModel is what a model of the chart's values says of the recipe.
type pdModel struct {
	enablePD         string // the values path of enablePD: true, "" when not set
	kvRole, nixlRole string
	// lmcacheKeys are the paths of the LMCache P/D keys the model sets,
	// which the stack replaces or does not need, and values their values by
	// key.
	lmcacheKeys []string
	values      map[string]string
}

// pdReplaced says why the LMCache P/D keys of a recipe converted to transfer
// nixl are gone.
const pdReplaced = "replaced: the converted stack's decode engines pull the KV cache with vLLM's NixlConnector (disaggregation), which needs no LMCache P/D settings"

// pdFlag records an LMCache P/D key of the current model.
func pdFlag(set func(pd *pdModel, n node) error) func(*converter, node) error {
	return func(c *converter, n node) error {
		c.cur.pd.lmcacheKeys = append(c.cur.pd.lmcacheKeys, n.path)
		if c.cur.pd.values == nil {
			c.cur.pd.values = map[string]string{}
		}
		c.cur.pd.values[n.path[strings.LastIndex(n.path, ".")+1:]] = fmt.Sprint(n.v)
		return set(&c.cur.pd, n)
	}
}

var (
	pdEnable = pdFlag(func(pd *pdModel, n node) error {
		on, err := n.boolean()
		if on {
			pd.enablePD = n.path
		}
		return err
	})
	pdKVRole   = pdFlag(func(pd *pdModel, n node) (err error) { pd.kvRole, err = n.str(); return err })
	pdNixlRole = pdFlag(func(pd *pdModel, n node) (err error) { pd.nixlRole, err = n.str(); return err })
	pdOther    = pdFlag(func(*pdModel, node) error { return nil })
)

// role is the model's part in the recipe: "prefill", "decode", or "".
func (pd pdModel) role() string {
	switch {
	case pd.enablePD == "":
		return ""
	case pd.kvRole == "kv_producer" || (pd.kvRole == "" && pd.nixlRole == "sender"):
		return "prefill"
	case pd.kvRole == "kv_consumer" || (pd.kvRole == "" && pd.nixlRole == "receiver"):
		return "decode"
	}
	return ""
}

// disaggregate converts the recipe, once every model is read: the two
// models become one with disaggregation. Without the recipe, its keys are
// dropped as before.
func (c *converter) disaggregate() error {
	var prefill, decode *modelState
	for _, m := range c.models {
		switch m.pd.role() {
		case "prefill":
			if prefill != nil {
				return fmt.Errorf("%s and %s are both prefill models (lmcacheConfig.enablePD with kvRole kv_producer): a stack disaggregates one model into one prefill and one decode group", prefill.pd.enablePD, m.pd.enablePD)
			}
			prefill = m
		case "decode":
			if decode != nil {
				return fmt.Errorf("%s and %s are both decode models (lmcacheConfig.enablePD with kvRole kv_consumer): a stack disaggregates one model into one prefill and one decode group", decode.pd.enablePD, m.pd.enablePD)
			}
			decode = m
		}
	}
	logic := c.lookup("routerSpec.routingLogic")
	if prefill == nil || decode == nil || c.routingLogic() != "disaggregated_prefill" || len(c.models) != 2 {
		for _, m := range c.models {
			for _, k := range m.pd.lmcacheKeys {
				c.res.drop(k, pdReason)
			}
		}
		if c.routingLogic() == "disaggregated_prefill" {
			c.res.drop(logic.path, pdReason+"; the stack routes roundrobin")
		}
		return nil
	}
	if prefill.m.ModelURL != decode.m.ModelURL || prefill.m.Path != decode.m.Path {
		return fmt.Errorf("%s.modelURL %q and %s.modelURL %q differ: the prefill and decode models of a disaggregated model serve the same weights", prefill.path, prefill.m.ModelURL, decode.path, decode.m.ModelURL)
	}
	// The recipe picks GPUs of one node; each engine pod gets its own.
	for _, m := range []*modelState{prefill, decode} {
		if i := slices.IndexFunc(m.m.Env, func(v corev1.EnvVar) bool { return v.Name == "CUDA_VISIBLE_DEVICES" }); i >= 0 {
			c.res.note(m.path+".lmcacheConfig.cudaVisibleDevices", "left out: each engine pod gets its own GPUs from the device plugin and sees them from index 0; the recipe's values pick GPUs of one node")
			m.m.Env = slices.Delete(slices.Clone(m.m.Env), i, i+1)
		}
	}
	merged := *prefill
	if base, ok := strings.CutSuffix(prefill.name, "-prefill"); ok && decode.name == base+"-decode" {
		// The groups' pod labels then stay the chart's: base-prefill, base-decode.
		merged.name, merged.m.Name = base, base
	}
	merged.m.Disaggregation = &v1alpha1.Disaggregation{
		Prefill: groupOf(prefill.m.EngineConfig),
		Decode:  groupOf(decode.m.EngineConfig),
		// The chart's UCX transports for P/D, and its pods' host PID and
		// IPC namespaces, without which cuda_ipc does not reach a pod on
		// the same node (deployment-vllm-multi.yaml).
		UCXTLS:        "cuda_ipc,cuda_copy,tcp",
		HostPIDAndIPC: ptr.To(true),
	}
	// The groups set what the models set apart; the transfer configures
	// the engines' --kv-transfer-config and LMCache.
	e := &merged.m.EngineConfig
	*e = withoutGroupFields(*e)
	e.LMCacheConfig = nil
	for _, m := range []*modelState{prefill, decode} {
		// The recipe labels its models' pods for the router's flags; the
		// stack labels the groups' pods itself.
		if p := m.m.Pod; p != nil && p.Labels["model"] != "" {
			c.res.note(m.path+".labels.model", fmt.Sprintf("left out: the stack labels the %s group's pods model: %s-%s itself, and passes the label to the router", m.pd.role(), merged.name, m.pd.role()))
		}
	}
	if p := e.Pod; p != nil && p.Labels != nil {
		pod := *p
		pod.Labels = maps.Clone(p.Labels)
		delete(pod.Labels, "model")
		if len(pod.Labels) == 0 {
			pod.Labels = nil
		}
		e.Pod = &pod
	}
	if d := differences(prefill.m.EngineConfig, decode.m.EngineConfig); len(d) > 0 {
		c.res.note(decode.path, "the decode model's "+strings.Join(d, ", ")+" differ from the prefill model's: the stack takes the prefill model's (a group sets only replicas, resources, tensorParallelSize, nodeSelector, tolerations and extraArgs)")
	}
	if image := imageOf(prefill.m.EngineConfig); stack.LMCacheTransferImage(image) {
		c.keepLMCacheTransfer(prefill, decode, &merged)
	} else {
		c.toNIXL(prefill, decode, &merged, image)
	}
	c.res.note(prefill.pd.enablePD, "hostPIDAndIPC true: the chart runs the recipe's pods with hostPID and hostIPC, which UCX's cuda_ipc needs between pods on one node; they are privileged: remove hostPIDAndIPC where the groups run on different nodes or Pod Security forbids host namespaces (UCX then uses tcp)")
	c.stripPDLabels()
	c.mergedInto = map[string]string{prefill.name: merged.name, decode.name: merged.name}
	c.models = []*modelState{&merged}
	return nil
}

// keepLMCacheTransfer converts the recipe as it is: the engines' image
// carries the mid-2025 LMCache whose NIXL backend it uses, so the stack's
// transfer lmcache renders what the chart renders.
func (c *converter) keepLMCacheTransfer(prefill, decode, merged *modelState) {
	merged.m.Disaggregation.Transfer = "lmcache"
	// What transfer lmcache renders for the recipe's keys.
	rendered := map[string]string{"nixlPeerPort": "55555", "nixlBufferSize": "1073741824", "nixlBufferDevice": "cuda", "nixlEnableGc": "true"}
	for _, m := range []*modelState{prefill, decode} {
		keys := make([]string, 0, len(m.pd.lmcacheKeys))
		for _, k := range m.pd.lmcacheKeys {
			keys = append(keys, strings.TrimPrefix(k, m.path+".lmcacheConfig."))
		}
		c.res.note(m.path+".lmcacheConfig", strings.Join(keys, ", ")+" kept as disaggregation.transfer lmcache, which renders the recipe's LMCACHE_NIXL_* names for the group (role "+map[string]string{"prefill": "sender", "decode": "receiver"}[m.pd.role()]+", the receiver at the decode group's Service port 55555, a 1 GiB buffer on cuda, gc on): the image's mid-2025 LMCache reads them")
		for _, k := range slices.Sorted(maps.Keys(rendered)) {
			if v, ok := m.pd.values[k]; ok && !strings.EqualFold(v, rendered[k]) {
				c.res.note(m.path+".lmcacheConfig."+k, fmt.Sprintf("%s: the stack renders %s", v, rendered[k]))
			}
		}
		if l := m.m.LMCacheConfig; l != nil && l.Enabled != nil && *l.Enabled {
			c.res.note(m.path+".lmcacheConfig.enabled", "on through disaggregation.transfer lmcache, which configures the LMCache the transfer needs")
		}
	}
	c.res.note(prefill.pd.enablePD, fmt.Sprintf("converted: %s and %s become model %s with disaggregation transfer lmcache (groups %s-prefill and %s-decode): the prefill engine pushes the KV cache to the decode group's Service with LMCache's NIXL backend, as in the recipe", prefill.path, decode.path, merged.name, merged.name, merged.name))
	c.res.note(c.lookup("routerSpec.routingLogic").path, "disaggregated_prefill: kept; the router sends each request to one prefill and one decode engine (router 0.1.4 or later)")
}

// toNIXL converts the recipe to vLLM's NixlConnector: the engines' image
// does not carry the LMCache the recipe's names are read by.
func (c *converter) toNIXL(prefill, decode, merged *modelState, image string) {
	for _, m := range []*modelState{prefill, decode} {
		keys := make([]string, 0, len(m.pd.lmcacheKeys))
		for _, k := range m.pd.lmcacheKeys {
			keys = append(keys, strings.TrimPrefix(k, m.path+".lmcacheConfig."))
		}
		c.res.note(m.path+".lmcacheConfig", strings.Join(keys, ", ")+" "+pdReplaced)
		if l := m.m.LMCacheConfig; l != nil && l.Enabled != nil && *l.Enabled {
			c.res.note(m.path+".lmcacheConfig.enabled", "off: LMCache would set the engines' --kv-transfer-config, which disaggregation sets to vLLM's NixlConnector")
		}
	}
	c.res.note(prefill.pd.enablePD, fmt.Sprintf("converted: %s and %s become model %s with disaggregation (groups %s-prefill and %s-decode), whose decode engines pull the KV cache from the prefill pods with vLLM's NixlConnector instead of LMCache's NIXL backend, behind the router's disaggregated_prefill_orchestrated logic: the image %s is not an lmcache/vllm-openai image built from 2025-05-27 to 2025-09-11, so its LMCache does not read the recipe's LMCACHE_NIXL_* names or cannot be told to", prefill.path, decode.path, merged.name, merged.name, merged.name, image))
	c.res.note(prefill.path+".tag", "disaggregation needs vLLM 0.10.2 or later (NixlConnector, and an image with NIXL): if the image runs an older vLLM, use vllm/vllm-openai:v0.10.2 or later")
	c.res.note(c.lookup("routerSpec.routingLogic").path, "disaggregated_prefill_orchestrated: the router sends each request to a prefill engine, then to a decode engine with where to pull the KV cache from (router 0.1.11 or later)")
}

// imageOf is a model's engine image.
func imageOf(e v1alpha1.EngineConfig) string {
	if v := e.VLLMConfig; v != nil {
		return v.Image
	}
	return ""
}

// groupOf is what a group takes of a model of the recipe.
func groupOf(e v1alpha1.EngineConfig) *v1alpha1.DisaggregationGroup {
	g := &v1alpha1.DisaggregationGroup{Replicas: e.Replicas, Resources: e.Resources}
	if v := e.VLLMConfig; v != nil {
		g.TensorParallelSize, g.ExtraArgs = v.TensorParallelSize, v.ExtraArgs
	}
	if s := e.Scheduling; s != nil {
		g.NodeSelector, g.Tolerations = s.NodeSelector, s.Tolerations
	}
	return g
}

// schedulingWithout is a model's scheduling without what its groups set.
func schedulingWithout(s *v1alpha1.Scheduling) *v1alpha1.Scheduling {
	if s == nil {
		return nil
	}
	out := *s
	out.NodeSelector, out.Tolerations = nil, nil
	if reflect.ValueOf(out).IsZero() {
		return nil
	}
	return &out
}

// withoutGroupFields is an engine configuration without what a group sets.
func withoutGroupFields(e v1alpha1.EngineConfig) v1alpha1.EngineConfig {
	e.Replicas, e.Resources, e.Scheduling = nil, nil, schedulingWithout(e.Scheduling)
	if v := e.VLLMConfig; v != nil {
		vc := *v
		vc.TensorParallelSize, vc.ExtraArgs = nil, nil
		e.VLLMConfig = &vc
	}
	return e
}

// differences names the engine blocks the two models of the recipe set
// differently, other than what a group sets and LMCache, which the recipe
// sets apart.
func differences(a, b v1alpha1.EngineConfig) []string {
	blocks := func(e v1alpha1.EngineConfig) map[string]any {
		e = withoutGroupFields(e)
		e.LMCacheConfig = nil
		if p := e.Pod; p != nil && p.Labels != nil {
			pod := *p
			pod.Labels = maps.Clone(p.Labels)
			delete(pod.Labels, "model") // the recipe's, set apart on purpose
			e.Pod = &pod
		}
		var m map[string]any
		j, _ := json.Marshal(e)
		_ = json.Unmarshal(j, &m)
		return m
	}
	ma, mb := blocks(a), blocks(b)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		ja, _ := json.Marshal(ma[k])
		jb, _ := json.Marshal(mb[k])
		if string(ja) != string(jb) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mb)) {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// stripPDLabels removes the router flags the recipe passes in extraArgs:
// the function renders them from the groups.
func (c *converter) stripPDLabels() {
	r := c.spec.RouterConfig
	if r == nil {
		return
	}
	var kept []string
	for i := 0; i < len(r.ExtraArgs); i++ {
		a := r.ExtraArgs[i]
		flag, _, hasValue := strings.Cut(a, "=")
		if flag == "--prefill-model-labels" || flag == "--decode-model-labels" {
			c.res.note("routerSpec.extraArgs", fmt.Sprintf("%s left out: the function renders it from the groups' labels", flag))
			if !hasValue {
				i++ // its value
			}
			continue
		}
		kept = append(kept, a)
	}
	r.ExtraArgs = kept
}
