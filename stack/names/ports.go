package names

const (
	// NIXLSideChannelPort is where a prefill engine's NIXL handshake
	// listener binds (VLLM_NIXL_SIDE_CHANNEL_PORT), rendered explicitly: the
	// default moved from 5557 to 5600 at 0.11.0.
	NIXLSideChannelPort = 5600
)

const (
	NIXLPortName = "nixl"
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
	// LMCacheReceiverPort is where the decode engine's receiver binds and
	// the prefill engine's sender connects (LMCACHE_NIXL_RECEIVER_PORT), the
	// chart's zmq-port, named as the chart names it.
	LMCacheReceiverPort = 55555
)

const (
	LMCacheReceiverPortName = "zmq-port"
)

// Ports and paths of the engine container. The router calls
// http://<podIP>:8000/v1/models on every engine pod it discovers.
const (
	EnginePort = 8000
)

const (
	EnginePortName = "container-port"
)

const (
	ServicePort = 80
)

const (
	ServicePortName = "service-port"
)

const (
	// LMCacheWorkerPortName names the engine's LMCache worker port, which
	// the LMCache controller (in the router) calls with kvaware routing.
	LMCacheWorkerPortName = "lmcache-worker"
)

const (
	RouterPort = 8000
)

const (
	RouterPortName = "router-port"
)

const (
	RouterSvcPortName = "router-sport"
)

const (
	// Names of the router's LMCache controller ports, on the container and
	// the Service: lmcache-port as the chart names it.
	LMCachePortName = "lmcache-port"
)

const (
	LMCacheReplyPortName = "lmcache-reply"
)

const (
	LMCacheBeatPortName = "lmc-heartbeat"
)
