package inferencepool

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// A disaggregated model behind llm-d's picker (GAIE.md, "P/D behind llm-d's
// picker"): one pool over the model's prefill and decode pods, which carry
// the role label (upstream.PickerRoleLabel) the picker's prefill-filter and
// decode-filter read; the picker's disagg-profile-handler runs the decode
// profile, then, by the always-disagg-pd-decider, the prefill profile, and
// names the prefill endpoint in the x-prefiller-host-port header of the
// request it sends to the decode pod; there llm-d's routing sidecar,
// listening on the pool's target port in front of vLLM, sends the request
// to the prefill endpoint, then to its vLLM with the kv_transfer_params
// the prefill engine returned (vLLM's NixlConnector, the sidecar's nixlv2).

// Profile names, the disagg-profile-handler's defaults, written out.
const (
	ProfilePrefill = "prefill"
	ProfileDecode  = "decode"

	prefillFilter  = "prefill-filter"
	decodeFilter   = "decode-filter"
	pdDecider      = "always-disagg-pd-decider"
	profileHandler = "disagg-profile-handler"
	headersHandler = "disagg-headers-handler"
)

// The routing sidecar's container and where vLLM listens behind it.
const (
	SidecarContainerName = "routing-sidecar" // llm-d's manifests' name
	SidecarPortName      = "sidecar-http"
	// DecodeEnginePort is where a decode pod's vLLM listens behind the
	// sidecar: the sidecar's default from v0.10.0 and llm-d's manifests'.
	DecodeEnginePort = 8200
	// SidecarConnector is the sidecar's protocol for vLLM's NixlConnector.
	SidecarConnector = "nixlv2"
	sidecarHealth    = "/health" // answered by the sidecar itself
)

// A Sidecar is llm-d's routing sidecar on a decode pod.
type Sidecar struct {
	Image      string
	PullPolicy corev1.PullPolicy
	// Release is the sidecar's llm-d release, which spells its flags.
	Release upstream.Version
	// Port is where it listens: the pool's target port, which the picker
	// and the gateway send the decode pod's requests to.
	Port int32
	// EnginePort is where the pod's vLLM listens.
	EnginePort int32
}

// SidecarArgs are the sidecar's flags, --flag=value: its port, vLLM's,
// the NIXL protocol, and plain HTTP (the gateway sends plain HTTP to the
// pool's pods, appProtocol http; --secure-proxy defaults to true, a
// self-signed certificate).
func SidecarArgs(s Sidecar) []string {
	enginePort := "--vllm-port="
	if s.Release.AtLeast(upstream.SidecarModelServerPort) {
		enginePort = "--model-server-port=" // --vllm-port deprecated
	}
	return []string{
		"--port=" + strconv.Itoa(int(s.Port)),
		enginePort + strconv.Itoa(int(s.EnginePort)),
		"--kv-connector=" + SidecarConnector,
		"--secure-proxy=false",
	}
}

// SidecarContainer is the sidecar's container: an ordinary one beside
// vLLM, ready when it answers its own /health.
func SidecarContainer(s Sidecar) corev1.Container {
	return corev1.Container{
		Name:            SidecarContainerName,
		Image:           s.Image,
		ImagePullPolicy: s.PullPolicy,
		Args:            SidecarArgs(s),
		Ports:           []corev1.ContainerPort{{Name: SidecarPortName, ContainerPort: s.Port, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: sidecarHealth, Port: intstr.FromInt32(s.Port), Scheme: corev1.URISchemeHTTP,
			}},
			PeriodSeconds: 5, FailureThreshold: 3,
		},
	}
}

// ConfigPD is the picker's EndpointPickerConfig for a disaggregated
// model: the scorers, data layer and flow control of Config, the prefill
// and decode filters, the decider that disaggregates every request (the
// router's behaviour: each request goes through both groups), the profile
// handler naming both profiles and the decider, on v0.7.0 and v0.8.0 the
// headers handler that sends the prefill endpoint to the sidecar; and two
// profiles, each its group's filter before the scorers.
func ConfigPD(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64) string {
	var pd strings.Builder
	fmt.Fprintf(&pd, "- type: %s\n- type: %s\n- type: %s\n", prefillFilter, decodeFilter, pdDecider)
	fmt.Fprintf(&pd, "- type: %s\n  parameters:\n    profiles:\n      prefill: %s\n      decode: %s\n    deciders:\n      prefill: %s\n",
		profileHandler, ProfilePrefill, ProfileDecode, pdDecider)
	if upstream.PickerPDHeadersHandler(r) {
		fmt.Fprintf(&pd, "- type: %s\n  parameters:\n    prefillProfile: %s\n", headersHandler, ProfilePrefill)
	}
	return config(r, w, kvCacheMetric, ttlSeconds, pd.String(), nil, []profile{{ProfilePrefill, prefillFilter}, {ProfileDecode, decodeFilter}})
}
