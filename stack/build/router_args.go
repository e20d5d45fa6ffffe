package build

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

const (
	// Seconds between the router's scrapes of engine /metrics, and the
	// window of its request statistics.
	engineStatsInterval = 15
)

const (
	requestStatsWindow = 60
)

const (
	// RouterHome is the router's HOME, an emptyDir: the image runs as root
	// with HOME=/root, and the unprivileged user the router runs as here
	// could write nowhere. kvaware routing downloads the models' tokenizers
	// into $HOME/.cache/huggingface.
	RouterHome = "/home/router"
)

const (
	VolumeRouterHome = "home"
)

// routerPorts: the API port, and with kvaware the LMCache controller's.
func routerPorts(s *resolve.Stack) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: names.RouterPortName, ContainerPort: names.RouterPort, Protocol: corev1.ProtocolTCP}}
	for _, p := range controllerPorts(s) {
		ports = append(ports, corev1.ContainerPort{Name: p.name, ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// controllerPorts are the ports the LMCache controller in the router binds
// with kvaware routing: engines push cache events to the first, register and
// are answered on the reply port, and send heartbeats to the last.
func controllerPorts(s *resolve.Stack) []namedPort {
	r := s.Router
	if r.ControllerPort == 0 {
		return nil
	}
	return []namedPort{{names.LMCachePortName, r.ControllerPort}, {names.LMCacheReplyPortName, r.ReplyPort}, {names.LMCacheBeatPortName, r.HeartbeatPort}}
}

type namedPort struct {
	name string
	port int32
}

// RouterArgs are the arguments of vllm-router (the image's entrypoint). The
// router discovers this stack's engine pods by label and sends each request
// to one of them by the routing logic. Values from the spec or the XR are
// --name=value (see opt); constants stay --name value; extraArgs are the
// user's own options, verbatim at the end.
func RouterArgs(s *resolve.Stack) []string {
	args := []string{
		"--host", "0.0.0.0",
		"--port", strconv.Itoa(names.RouterPort),
		"--service-discovery", "k8s",
		opt("--k8s-namespace", s.Namespace),
		opt("--k8s-label-selector", engineDiscoverySelector(s.Name)),
		opt("--routing-logic", s.Router.RouterType),
	}
	if s.Router.DiscoveryType != "" {
		args = append(args, opt("--k8s-service-discovery-type", s.Router.DiscoveryType))
	}
	if s.Router.DiscoveryType == resolve.DiscoveryServiceName {
		// The router then dials http://<engine Service>:<k8s-port>; its
		// default, 8000, is the pods' port, not the Services'.
		args = append(args, "--k8s-port", strconv.Itoa(names.ServicePort))
	}
	switch r := s.Router; r.RouterType {
	case resolve.RoutingSession:
		// The router exits at start-up with session routing and no key.
		args = append(args, opt("--session-key", r.SessionKey))
	case resolve.RoutingPrefixAware:
		if n := r.PrefixMinMatch; n != nil {
			args = append(args, opt("--prefix-min-match-length", strconv.Itoa(int(*n))))
		}
	case resolve.RoutingDisaggregated, resolve.RoutingDisaggregatedLMCache:
		// The groups, by their engines' pod label "model".
		prefill, decode, _ := resolve.DisaggregatedLabels(s)
		args = append(args, opt("--prefill-model-labels", prefill), opt("--decode-model-labels", decode))
	case resolve.RoutingKVAware:
		// The router runs the LMCache controller on this port; engines
		// register with it and report the KV cache chunks they hold. A
		// request whose prefix no engine holds goes by its session header,
		// else by load.
		args = append(args, opt("--session-key", r.SessionKey),
			opt("--lmcache-controller-port", strconv.Itoa(int(r.ControllerPort))),
			opt("--lmcache-controller-reply-port", strconv.Itoa(int(r.ReplyPort))),
			opt("--lmcache-controller-heartbeat-port", strconv.Itoa(int(r.HeartbeatPort))))
		if n := r.KVThreshold; n != nil {
			args = append(args, opt("--kv-aware-threshold", strconv.Itoa(int(*n))))
		}
	}
	args = append(args,
		"--engine-stats-interval", strconv.Itoa(engineStatsInterval),
		"--request-stats-window", strconv.Itoa(requestStatsWindow))
	return append(args, s.Router.ExtraArgs...)
}

// routerEnv: a writable HOME; the API key, so the router can call engines
// that require it; with kvaware, the engines' hash seed and their Hugging
// Face token (the router downloads the models' tokenizers); then the user's
// variables, replacing a computed one of the same name.
func routerEnv(s *resolve.Stack) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "HOME", Value: RouterHome}}
	if k := s.Router.APIKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	if s.Router.RouterType == resolve.RoutingKVAware {
		env = append(env, hashSeedEnv)
		if t := s.HFTokenSecret(); t != nil {
			env = append(env, secretEnv("HF_TOKEN", t))
		}
	}
	return resolve.OverrideEnv(env, s.Router.Env)
}
