package build

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// KVEventsPortName names the engine's KV events port, where the picker
// subscribes with precise prefix-cache routing.
const KVEventsPortName = "kv-events"

// precisePrefixArgs make an engine publish its KV-cache events where its
// picker subscribes (stack/testdata/upstream/PRECISE-PREFIX.md): ZeroMQ on
// every interface at upstream.KVEventsPort, under the topic the picker
// parses (upstream.KVEventsTopic, with the pod's IP, which Kubernetes
// expands from $(POD_IP), the engine container's first variable), and the
// block size the picker chunks tokens by.
func precisePrefixArgs(e resolve.Engine) []string {
	if !e.PrecisePrefix {
		return nil
	}
	return []string{
		opt("--block-size", itoa(resolve.PrecisePrefixBlockSize)),
		opt("--kv-events-config", KVEventsConfig(e.Served)),
	}
}

// KVEventsConfig is the engines' --kv-events-config for the model requests
// name served (vllm/config/kv_events.py: enable_kv_cache_events, publisher
// zmq, endpoint, topic).
func KVEventsConfig(served string) string {
	cfg := struct {
		Enable    bool   `json:"enable_kv_cache_events"`
		Publisher string `json:"publisher"`
		Endpoint  string `json:"endpoint"`
		Topic     string `json:"topic"`
	}{true, "zmq", "tcp://*:" + itoa(upstream.KVEventsPort), upstream.KVEventsTopic("$(POD_IP)", names.EnginePort, served)}
	var b []byte
	b, _ = json.Marshal(cfg)
	return string(b)
}

// precisePrefixPorts: the KV events port, declared on the engine container.
func precisePrefixPorts(e resolve.Engine) []corev1.ContainerPort {
	if !e.PrecisePrefix {
		return nil
	}
	return []corev1.ContainerPort{{Name: KVEventsPortName, ContainerPort: upstream.KVEventsPort, Protocol: corev1.ProtocolTCP}}
}

// precisePicker is what a model's picker needs for precise prefix-cache
// routing, nil without it: the model's engines tokenize for it through
// their Service (so the tokenizer is the one of the engines' source and
// revision, and no Hugging Face token reaches the picker), and it
// subscribes to their events with their block size and hash seed.
func precisePicker(s *resolve.Stack, e resolve.Engine) *inferencepool.Precise {
	if !e.PrecisePrefix {
		return nil
	}
	return &inferencepool.Precise{
		Model:      e.Served,
		RenderURL:  "http://" + s.Names.EngineService(e.ID) + "." + s.Namespace + ".svc:" + itoa(names.ServicePort),
		BlockSize:  resolve.PrecisePrefixBlockSize,
		HashSeed:   resolve.PrecisePrefixHashSeed,
		EventsPort: upstream.KVEventsPort,
	}
}
