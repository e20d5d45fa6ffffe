package stack

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A disaggregated model is served by two groups of ordinary engines, the
// production-stack chart's recipe: a prefill group that computes each
// prompt's KV cache and a decode group that pulls it and generates. The
// router's disaggregated_prefill_orchestrated logic (router 0.1.11) sends a
// request to a prefill engine with max_tokens 1, then to a decode engine
// with the kv_transfer_params the prefill engine returned, its remote_host
// replaced by the prefill endpoint's host; the decode engine then dials the
// prefill pod's NIXL side channel directly (facts:
// testdata/upstream/disagg.tsv, DISAGG-MULTINODE.md §1).
const (
	rolePrefill = "prefill"
	roleDecode  = "decode"

	transferNIXL    = "nixl"
	transferLMCache = "lmcache"

	// The router's logic for each transfer: orchestrated passes vLLM's
	// kv_transfer_params from the prefill engine to the decode engine;
	// disaggregated_prefill sends the request to one engine of each group
	// and leaves the transfer to LMCache.
	routingDisaggregated        = "disaggregated_prefill_orchestrated"
	routingDisaggregatedLMCache = "disaggregated_prefill"

	// nixlSideChannelPort is where a prefill engine's NIXL handshake
	// listener binds (VLLM_NIXL_SIDE_CHANNEL_PORT), rendered explicitly: the
	// default moved from 5557 to 5600 at 0.11.0.
	nixlSideChannelPort = 5600
	nixlPortName        = "nixl"
)

// roleGroups are the groups of a disaggregated model, in the order their
// engines are built.
var roleGroups = []string{rolePrefill, roleDecode}

// Releases of the NIXL path: NixlConnector is registered from vLLM 0.9.0,
// but the vllm/vllm-openai image has NIXL only from 0.10.2; from 0.11.1 the
// side channel is one listener per data parallel rank instead of one per
// tensor parallel rank.
var (
	nixlSince             = upstream.V(0, 10, 2)
	nixlOneListenerSince  = upstream.V(0, 11, 1)
	routerDisaggregatedAt = upstream.V(0, 1, 11)
)

// disaggregated reports whether a merged engine configuration asks for
// disaggregation.
func disaggregated(c v1alpha1.EngineConfig) bool {
	d := c.Disaggregation
	return d != nil && (d.Enabled == nil || *d.Enabled)
}

// groupOf is the group block of a role.
func groupOf(d *v1alpha1.Disaggregation, role string) *v1alpha1.DisaggregationGroup {
	g := d.Prefill
	if role == roleDecode {
		g = d.Decode
	}
	if g == nil {
		return &v1alpha1.DisaggregationGroup{}
	}
	return g
}

// transferOf is how a disaggregated engine's KV cache moves.
func transferOf(e engine) string {
	if t := e.cfg.Disaggregation.Transfer; t != "" {
		return t
	}
	return transferNIXL
}

// routingFor is the router's logic for a transfer.
func routingFor(transfer string) string {
	if transfer == transferLMCache {
		return routingDisaggregatedLMCache
	}
	return routingDisaggregated
}

// isDisaggregatedRouting reports whether the router's logic is one the
// stack sets for a disaggregated model (never chosen by routerType).
func isDisaggregatedRouting(routerType string) bool {
	return routerType == routingDisaggregated || routerType == routingDisaggregatedLMCache
}

// transferArgs, transferEnv, transferPorts and transferServicePorts are
// what a group's engine needs for its transfer; nothing for an engine of a
// model that is not disaggregated.
func transferArgs(e engine) []string {
	switch {
	case e.role == "":
		return nil
	case transferOf(e) == transferLMCache:
		return lmcachePDArgs(e)
	}
	return nixlArgs(e)
}

func transferEnv(s *resolvedStack, e engine) []corev1.EnvVar {
	switch {
	case e.role == "":
		return nil
	case transferOf(e) == transferLMCache:
		return lmcachePDEnv(s, e)
	}
	return nixlEnv(e)
}

func transferPorts(e engine) []corev1.ContainerPort {
	switch {
	case e.role == "":
		return nil
	case transferOf(e) == transferLMCache:
		return lmcachePDPorts(e)
	}
	return nixlPorts(e)
}

func transferServicePorts(e engine) []corev1.ServicePort {
	if e.role == "" || transferOf(e) != transferLMCache {
		return nil
	}
	return lmcachePDServicePorts(e)
}

// split makes the engines of a disaggregated model: one per group, named
// and labelled M-prefill and M-decode (the router tells the groups apart by
// the pod label "model"), serving the model under the same name, each with
// the group's settings over the model's.
func split(e engine, n names) []engine {
	out := make([]engine, 0, len(roleGroups))
	for _, role := range roleGroups {
		g := e
		g.role = role
		g.id = shorten(e.id+"-"+role, maxLabelLength)
		g.label = e.label + "-" + role
		if !isLabelValue(g.label) {
			g.label = g.id
		}
		g.templatesVolume = n.chatTemplatesVolume(g.id)
		g.cfg = groupConfig(e.cfg, groupOf(e.cfg.Disaggregation, role))
		g.layers = append(slices.Clip(e.layers), groupLayers(e.layers, role)...)
		out = append(out, g)
	}
	return out
}

// groupConfig is a model's merged engine configuration with a group's
// settings over it, merged as a models[] item's are over the top level
// (mergeConfig); the group's extraArgs come after the model's. Nothing of c
// is changed.
func groupConfig(c v1alpha1.EngineConfig, g *v1alpha1.DisaggregationGroup) v1alpha1.EngineConfig {
	over := groupBlocks(g)
	over.VLLMConfig.ExtraArgs = nil
	out := mergeConfig(c, over)
	out.VLLMConfig.ExtraArgs = slices.Concat(c.VLLMConfig.ExtraArgs, g.ExtraArgs)
	return out
}

// groupBlocks is what a group sets, as engine blocks.
func groupBlocks(g *v1alpha1.DisaggregationGroup) v1alpha1.EngineConfig {
	over := v1alpha1.EngineConfig{Replicas: g.Replicas, Resources: g.Resources,
		VLLMConfig: &v1alpha1.VLLMConfig{TensorParallelSize: g.TensorParallelSize, ExtraArgs: g.ExtraArgs}}
	if g.NodeSelector != nil || g.Tolerations != nil {
		over.Scheduling = &v1alpha1.Scheduling{NodeSelector: g.NodeSelector, Tolerations: g.Tolerations}
	}
	return over
}

// groupLayers are the group blocks of a role in a model's layers: the
// group as written in each block that sets it.
func groupLayers(model []layer, role string) []layer {
	var out []layer
	for _, l := range model {
		d := l.cfg.Disaggregation
		if d == nil {
			continue
		}
		g := d.Prefill
		if role == roleDecode {
			g = d.Decode
		}
		if g != nil {
			out = append(out, layer{path: l.path + ".disaggregation." + role, cfg: groupBlocks(g), flat: []string{"vllmConfig", "scheduling"}})
		}
	}
	return out
}

// nixlArgs make a group's engine a NIXL producer (prefill) or consumer
// (decode). Up to vLLM 0.22.0 the connector reads no kv_role; from 0.23.0
// kv_both is deprecated in favour of these two. engine_id, kv_ip and kv_port
// are not rendered: vLLM makes the id, and the NIXL path uses neither.
func nixlArgs(e engine) []string {
	kvRole := "kv_producer"
	if e.role == roleDecode {
		kvRole = "kv_consumer"
	}
	return []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"` + kvRole + `"}`}
}

// nixlEnv: the side channel binds the pod's IP (its default, localhost,
// cannot be reached from the decode pod) on an explicit port; UCX_TLS only
// when the stack sets it (UCX reads it, not vLLM).
func nixlEnv(e engine) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: podIPEnv.ValueFrom},
		{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: strconv.Itoa(nixlSideChannelPort)},
	}
	if t := e.cfg.Disaggregation.UCXTLS; t != "" {
		env = append(env, corev1.EnvVar{Name: "UCX_TLS", Value: t})
	}
	return env
}

// nixlPorts are the side channel's listeners: one per tensor parallel rank
// up to vLLM 0.11.0, one from 0.11.1 (data parallel size 1).
func nixlPorts(e engine) []corev1.ContainerPort {
	n := int32(1)
	if e.vllm.version.Less(nixlOneListenerSince) && e.cfg.VLLMConfig.TensorParallelSize != nil {
		n = *e.cfg.VLLMConfig.TensorParallelSize
	}
	ports := make([]corev1.ContainerPort, 0, n)
	for i := range n {
		name := nixlPortName
		if i > 0 {
			name += "-" + strconv.Itoa(int(i))
		}
		ports = append(ports, corev1.ContainerPort{Name: name, ContainerPort: nixlSideChannelPort + i, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// hostNamespaces puts a group's pods in the node's PID and IPC namespaces
// when the stack asks for it: legacy CUDA IPC handles cannot be opened
// across PID namespaces, so UCX's cuda_ipc reaches a pod on the same node
// only so (disagg.tsv, UCX and vLLM rows). Never without the field: it is
// privileged.
func hostNamespaces(pod *corev1.PodSpec, e engine) {
	if e.role != "" && enabled(e.cfg.Disaggregation.HostPIDAndIPC) {
		pod.HostPID, pod.HostIPC = true, true
	}
}

// routerTypeChosen reports whether the stack chose a routing logic: one
// other than the default, roundrobin, which the API server writes into every
// stack that sets none (the XRD's default).
func routerTypeChosen(rc *v1alpha1.RouterConfig) bool {
	return rc != nil && rc.RouterType != "" && rc.RouterType != DefaultRouterType
}

// disaggregatedLabels are the values of the pod label "model" of the
// stack's prefill and decode engines, for the router's flags.
func disaggregatedLabels(s *resolvedStack) (prefill, decode string, ok bool) {
	for _, e := range s.engines {
		switch e.role {
		case rolePrefill:
			prefill = e.label
		case roleDecode:
			decode = e.label
		}
	}
	return prefill, decode, prefill != "" && decode != ""
}

// validateDisaggregation refuses a disaggregated model the programs could not
// serve as asked, naming the release or setting that stands in the way.
func validateDisaggregation(f *Findings, spec *v1alpha1.ProductionStackSpec, s *resolvedStack) {
	var groups []engine
	for _, e := range s.engines {
		if e.role != "" {
			groups = append(groups, e)
		}
	}
	if len(groups) == 0 {
		return
	}
	e := groups[0] // the model's own settings are those of both groups
	p := e.block + ".disaggregation"
	transfer := transferOf(e)
	routing := routingFor(transfer)
	if len(s.engines) > len(groups) || len(groups) > len(roleGroups) {
		if extensionOn(s) {
			f.errorf("%s: a stack with a disaggregated model serves that model alone: its InferencePool selects the stack's serving pods, both groups'; serve the other models from stacks of their own", p)
		} else {
			f.errorf("%s: a stack with a disaggregated model serves that model alone: the router's routing logic (%s) applies to every model; serve the other models from stacks of their own", p, routing)
		}
	}
	switch transfer {
	case transferNIXL:
		if e.vllmErr == nil && e.vllm.version.Less(nixlSince) {
			f.errorf("%s.transfer nixl needs vLLM %s or later, the first vllm/vllm-openai image with NIXL, and the engine runs vLLM %s: use a newer image", p, nixlSince, e.vllm)
		}
	case transferLMCache:
		validateLMCacheTransfer(f, s, groups)
	default:
		f.errorf("%s.transfer %q is not supported: use nixl or lmcache", p, transfer)
	}
	if lmcacheOn(e) {
		f.errorf("%s: lmcacheConfig.enabled and disaggregation both set the engines' --kv-transfer-config: turn LMCache off for a disaggregated model (transfer lmcache configures the LMCache it needs)", p)
	}
	if autoscaled(e) {
		f.errorf("%s: autoscaling scales one Deployment per model and a disaggregated model has two: turn autoscaling off and set each group's replicas", p)
	}
	warnIdleGroup(f, groups)
	if enabled(e.cfg.Disaggregation.HostPIDAndIPC) && e.cfg.Pod != nil {
		apiProblems(f, e.block+".pod.securityContext", kubeapi.HostIPCSysctls(e.cfg.Pod.SecurityContext))
	}
	if extensionOn(s) {
		return // the picker routes it: validatePickerPD
	}
	r := s.router
	if routerTypeChosen(spec.RouterConfig) {
		f.errorf("spec.routerConfig.routerType %s cannot route a disaggregated model: remove routerType, the router then uses %s", spec.RouterConfig.RouterType, routing)
	}
	switch {
	case r.discoveryType != discoveryServiceName:
	case transfer == transferNIXL:
		f.errorf("spec.routerConfig.k8sServiceDiscoveryType %s cannot route a disaggregated model: the decode engine pulls the KV cache from the host the router names, which must be the prefill pod, not its Service; use pod-ip", discoveryServiceName)
	default:
		f.errorf("spec.routerConfig.k8sServiceDiscoveryType %s cannot route a disaggregated model: the router tells the groups apart by the label model, which it reads from a Service's selector there, and the stack's Services select pods by their name labels; use pod-ip", discoveryServiceName)
	}
	if transfer == transferNIXL && r.versionErr == nil && r.version.version.Less(routerDisaggregatedAt) {
		f.errorf("%s needs router %s or later, the first with --routing-logic %s, and the router is %s: use a newer router image", p, routerDisaggregatedAt, routingDisaggregated, r.version)
	}
}

// warnIdleGroup: every request of a disaggregated model goes through both
// groups, so with one at 0 replicas and the other not the model answers
// none, while the other group holds its GPUs.
func warnIdleGroup(f *Findings, groups []engine) {
	for _, g := range groups {
		if *g.cfg.Replicas != 0 {
			continue
		}
		for _, o := range groups {
			if n := *o.cfg.Replicas; n > 0 {
				f.warnf("%s 0 and %s %d: every request of a disaggregated model goes through both groups, so the model answers none while the %s group holds its GPUs; set both to 0 to stop the model, or both above 0", g.origin("replicas"), o.origin("replicas"), n, o.role)
				return
			}
		}
	}
}

// groupPath is where an engine's own settings are written: the group of a
// disaggregated model's, else its engine blocks.
func (e engine) groupPath() string {
	if e.role == "" {
		return e.block
	}
	for i := len(e.layers) - 1; i >= 0; i-- {
		if p := e.layers[i].path; strings.HasSuffix(p, ".disaggregation."+e.role) {
			return p
		}
	}
	return e.block + ".disaggregation." + e.role
}
