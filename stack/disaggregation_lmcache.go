package stack

import (
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// transfer lmcache is the production-stack chart's recipe (tutorial 16):
// LMCacheConnectorV1 in both groups, and LMCache's NIXL backend of mid-2025
// moving the KV cache. The prefill engine's LMCache (sender) pushes each
// prompt's KV cache to a receiver it is configured with, the decode group's
// Service; the decode engine's LMCache (receiver) binds that port and hands
// the cache to vLLM. The router's disaggregated_prefill logic sends the
// request to one prefill engine with max_tokens 1, then to one decode
// engine. Facts: testdata/upstream/disagg.tsv ("LMCache P/D" and "chart"
// rows), lmcache-env.tsv.
//
// Only mid-2025 LMCache can do this behind the production-stack router:
// LMCache#1579 (merged 2025-09-12) removed these names for pd_* keys, and
// its sender then learns the receiver from a per-request disagg_spec that no
// router release sends. The function cannot see an image's LMCache, so the
// image must tell it by its build date.
const (
	// lmcacheReceiverPort is where the decode engine's receiver binds and
	// the prefill engine's sender connects (LMCACHE_NIXL_RECEIVER_PORT), the
	// chart's zmq-port, named as the chart names it.
	lmcacheReceiverPort     = 55555
	lmcacheReceiverPortName = "zmq-port"

	// lmcacheNIXLBufferSize is the NIXL transfer buffer of each engine, in
	// bytes, on the GPU: the chart tutorial's 1 GiB.
	lmcacheNIXLBufferSize = "1073741824"

	// lmcacheTransferImage is the image family whose build date tells its
	// LMCache.
	lmcacheTransferImage = lmcacheImage
)

// The build dates of lmcache/vllm-openai images whose LMCache has the
// mid-2025 NIXL backend: from the chart's tutorial image (2025-05-27-v1),
// the oldest known to carry it, to the day before LMCache#1579 was merged.
const (
	lmcacheTransferFirstDate = "2025-05-27"
	lmcacheTransferLastDate  = "2025-09-11"
)

// routerDisaggregatedLMCacheAt is the first router whose service discovery
// keeps a client for each group, found by --prefill-model-labels and
// --decode-model-labels; 0.1.3 parses the flags but sends the prefill
// engine the request's own bytes, so it generates the whole answer too.
var routerDisaggregatedLMCacheAt = upstream.V(0, 1, 4)

// imageBuildDate is the date an lmcache/vllm-openai tag starts with
// (2025-05-27-v1), if it does.
var imageBuildDate = regexp.MustCompile(`^(20[0-9]{2}-[01][0-9]-[0-3][0-9])(?:$|[-_.])`)

// lmcacheTransferImageDate is the build date of the engine's image, if it
// is an lmcache/vllm-openai image tagged with one.
func lmcacheTransferImageDate(e engine) (image, date string, ok bool) {
	v := e.cfg.VLLMConfig
	image = imageRef(v.ImagePullRegistry, v.Image)
	date, ok = imageBuiltOn(image)
	return image, date, ok
}

func imageBuiltOn(image string) (date string, ok bool) {
	repo, tag := upstream.ImageTag(image)
	m := imageBuildDate.FindStringSubmatch(tag)
	if !isImageOf(repo, lmcacheTransferImage) || m == nil {
		return "", false
	}
	return m[1], true
}

// LMCacheTransferImage reports whether an engine image carries what
// disaggregation's transfer lmcache needs: an lmcache/vllm-openai image
// built while LMCache had its mid-2025 NIXL backend.
func LMCacheTransferImage(image string) bool {
	date, ok := imageBuiltOn(image)
	return ok && lmcacheTransferFirstDate <= date && date <= lmcacheTransferLastDate
}

// lmcachePDRole is the group's part as LMCache's NIXL backend and vLLM's
// kv_role name it.
func lmcachePDRole(e engine) (nixlRole, kvRole string) {
	if e.role == roleDecode {
		return "receiver", "kv_consumer"
	}
	return "sender", "kv_producer"
}

// lmcachePDArgs are the chart's: LMCacheConnectorV1 as producer or consumer,
// saving the last partial chunk too (discard_partial_chunks false) so the
// decode engine receives the whole prompt; lmcache_rpc_port names the
// engine's LMCache socket, the chart's value.
func lmcachePDArgs(e engine) []string {
	nixlRole, kvRole := lmcachePDRole(e)
	return []string{"--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"` + kvRole +
		`","kv_connector_extra_config":{"discard_partial_chunks":false,"lmcache_rpc_port":"` + nixlRole + `"}}`}
}

// lmcachePDEnv configures LMCache under the mid-2025 names (LMCACHE_ + key),
// as the chart does with enablePD: no CPU buffer (the cache moves GPU to
// GPU), NIXL on with the group's role, the receiver's address (the decode
// Service for the sender; every interface for the receiver, which binds
// it), the chart's buffer on the GPU, and its garbage collection on.
func lmcachePDEnv(s *resolvedStack, e engine) []corev1.EnvVar {
	nixlRole, _ := lmcachePDRole(e)
	receiver := "0.0.0.0"
	if e.role == rolePrefill {
		receiver = s.names.engineService(decodeEngine(s).id)
	}
	env := []corev1.EnvVar{
		{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
		{Name: "LMCACHE_LOG_LEVEL", Value: "INFO"},
		{Name: "LMCACHE_LOCAL_CPU", Value: "False"},
		{Name: "LMCACHE_MAX_LOCAL_CPU_SIZE", Value: "0"},
		{Name: "LMCACHE_ENABLE_NIXL", Value: "True"},
		{Name: "LMCACHE_NIXL_ROLE", Value: nixlRole},
		{Name: "LMCACHE_NIXL_RECEIVER_HOST", Value: receiver},
		{Name: "LMCACHE_NIXL_RECEIVER_PORT", Value: strconv.Itoa(lmcacheReceiverPort)},
		{Name: "LMCACHE_NIXL_BUFFER_SIZE", Value: lmcacheNIXLBufferSize},
		{Name: "LMCACHE_NIXL_BUFFER_DEVICE", Value: "cuda"},
		{Name: "LMCACHE_NIXL_ENABLE_GC", Value: "True"},
	}
	if t := e.cfg.Disaggregation.UCXTLS; t != "" {
		env = append(env, corev1.EnvVar{Name: "UCX_TLS", Value: t})
	}
	return env
}

// decodeEngine is the stack's decode group's engine; validation allows one
// disaggregated model per stack.
func decodeEngine(s *resolvedStack) engine {
	for _, e := range s.engines {
		if e.role == roleDecode {
			return e
		}
	}
	return engine{}
}

// lmcachePDPorts: the decode engine's receiver listens; the sender only
// connects.
func lmcachePDPorts(e engine) []corev1.ContainerPort {
	if e.role != roleDecode {
		return nil
	}
	return []corev1.ContainerPort{{Name: lmcacheReceiverPortName, ContainerPort: lmcacheReceiverPort, Protocol: corev1.ProtocolTCP}}
}

// lmcachePDServicePorts: the sender reaches the receiver through the decode
// group's Service, as in the chart.
func lmcachePDServicePorts(e engine) []corev1.ServicePort {
	if e.role != roleDecode {
		return nil
	}
	return []corev1.ServicePort{{Name: lmcacheReceiverPortName, Port: lmcacheReceiverPort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromString(lmcacheReceiverPortName)}}
}

// validateLMCacheTransfer refuses what LMCache's mid-2025 path and the
// router's disaggregated_prefill logic cannot serve as asked.
func validateLMCacheTransfer(f *Findings, s *resolvedStack, groups []engine) {
	e := groups[0]
	p := e.block + ".disaggregation"
	if image, date, ok := lmcacheTransferImageDate(e); !ok {
		f.errorf("%s.transfer lmcache needs the NIXL backend of mid-2025 LMCache, which the function can only tell from an %s image tagged with its build date, and the engine's image is %s: use %s:%s-v1 (the chart's), or transfer nixl", p, lmcacheTransferImage, image, lmcacheTransferImage, lmcacheTransferFirstDate)
	} else if date < lmcacheTransferFirstDate || date > lmcacheTransferLastDate {
		f.errorf("%s.transfer lmcache needs the NIXL backend of mid-2025 LMCache, in images built from %s to %s, and the engine's image %s was built %s: LMCache#1579 (2025-09-12) replaced it with a backend that waits for a request field no router release sends; use %s:%s-v1 (the chart's), or transfer nixl", p, lmcacheTransferFirstDate, lmcacheTransferLastDate, image, date, lmcacheTransferImage, lmcacheTransferFirstDate)
	}
	if e.vllmErr == nil && e.vllm.version.Less(upstream.VLLMLMCacheV1First) {
		f.errorf("%s.transfer lmcache needs vLLM %s or later (LMCacheConnectorV1), and the engine runs vLLM %s: remove engineVersion or declare the vLLM the image runs", p, upstream.VLLMLMCacheV1First, e.vllm)
	}
	for _, g := range groups {
		if tp := tensorParallelSize(g); tp > 1 {
			f.errorf("%s: transfer lmcache takes one receiver port per engine, and tensorParallelSize %d runs %d workers that each need one (how LMCache spread ranks over ports changed in July 2025, LMCache#1039, and an image does not say which it has): use tensorParallelSize 1 or transfer nixl", g.groupPath(), tp, tp)
		}
		switch n := *g.cfg.Replicas; {
		case g.role == roleDecode && n > 1:
			f.errorf("%s.replicas %d: with transfer lmcache the prefill engine pushes the KV cache to the decode Service, which picks any decode pod, while the router decodes on one of them: use one decode engine, or transfer nixl, where the router names the prefill pod to every decode engine", g.groupPath(), n)
		case g.role == rolePrefill && n > 1:
			f.warnf("%s.replicas %d: the router's disaggregated_prefill logic sends every prompt to one prefill engine (the last it discovered), so the others stay idle: use one prefill engine, or transfer nixl, which spreads prompts over all", g.groupPath(), n)
		}
	}
	r := s.router
	if r.versionErr == nil && r.version.version.Less(routerDisaggregatedLMCacheAt) {
		f.errorf("%s.transfer lmcache needs router %s or later, the first that keeps a client per group for --routing-logic %s, and the router is %s: use a newer router image", p, routerDisaggregatedLMCacheAt, routingDisaggregatedLMCache, r.version)
	}
}
