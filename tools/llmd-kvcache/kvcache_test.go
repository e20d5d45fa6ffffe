// Package kvcache holds the rendered precise prefix-cache routing to the
// code llm-d's picker runs for it: llm-d-kv-cache v0.9.0, the module llm-d
// router v0.9.0 and v0.10.0 pin (go.mod at both tags), whose kvblock and
// kvevents packages decode the precise-prefix-cache-producer's
// tokenProcessorConfig and kvEventsConfig and parse the engines' KV events.
// The router itself is not served by the Go module proxy (403 at every tag,
// docs/precise-routing.md), so its plugin wrapper is mirrored here: its
// PluginConfig (LLMD-R@v0.9.0:…/preciseprefixcache/producer.go:53-57) with
// the defaults its factory starts from (:105-113).
package kvcache

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
	"sigs.k8s.io/yaml"
)

// golden is the function's rendering of example/stacks/precise-prefix.yaml
// through crossplane render (test/render's golden).
const golden = "../../example/golden/precise-prefix.yaml"

// rendered are the documents of the golden of kind, by name.
func rendered(t *testing.T, kind string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		if o["kind"] == kind {
			out[o["metadata"].(map[string]any)["name"].(string)] = o
		}
	}
	return out
}

// pluginConfig is the producer's PluginConfig without the indexer's
// configuration, which the function does not write.
type pluginConfig struct {
	TokenProcessorConfig *kvblock.TokenProcessorConfig `json:"tokenProcessorConfig"`
	KVEventsConfig       *kvevents.Config              `json:"kvEventsConfig"`
}

// TestPrecisePrefixConfig: the picker's producer parameters decode, with no
// field unknown to llm-d-kv-cache v0.9.0, into a token processor of the
// engines' block size and hash seed and an events pool that subscribes to
// each endpoint at the engines' port; and an engine's KV events topic,
// $(POD_IP) expanded, parses into the pod identifier the picker scores
// (address:port of the pool's target port) and the model the requests carry.
func TestPrecisePrefixConfig(t *testing.T) {
	cm, ok := rendered(t, "ConfigMap")["precise-chat-epp"]
	if !ok {
		t.Fatal("no picker ConfigMap precise-chat-epp")
	}
	var cfg struct {
		Plugins []struct {
			Type       string          `json:"type"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal([]byte(cm["data"].(map[string]any)["config.yaml"].(string)), &cfg); err != nil {
		t.Fatal(err)
	}
	p := pluginConfig{KVEventsConfig: kvevents.DefaultConfig()}
	found := false
	for _, pl := range cfg.Plugins {
		if pl.Type != "precise-prefix-cache-producer" {
			continue
		}
		found = true
		d := json.NewDecoder(bytes.NewReader(pl.Parameters))
		d.DisallowUnknownFields()
		if err := d.Decode(&p); err != nil {
			t.Fatalf("llm-d-kv-cache v0.9.0 cannot decode the producer's parameters: %v\n%s", err, pl.Parameters)
		}
	}
	if !found {
		t.Fatal("no precise-prefix-cache-producer in the picker's configuration")
	}
	tp, err := kvblock.NewChunkedTokenDatabase(p.TokenProcessorConfig)
	if err != nil {
		t.Fatal(err)
	}
	if tp.BlockSize() != 16 || p.TokenProcessorConfig.HashSeed != "0" {
		t.Errorf("token processor: block size %d, hash seed %q; the engines run --block-size=16 and PYTHONHASHSEED=0", tp.BlockSize(), p.TokenProcessorConfig.HashSeed)
	}
	e := p.KVEventsConfig
	if !e.DiscoverPods || e.PodDiscoveryConfig == nil || e.PodDiscoveryConfig.SocketPort != 5557 || e.TopicFilter != "kv@" {
		t.Errorf("events config %+v, pod discovery %+v: want per-endpoint subscriptions at 5557 with the filter kv@", e, e.PodDiscoveryConfig)
	}

	engine := rendered(t, "Deployment")["precise-chat-deployment-vllm"]
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	b, _ := json.Marshal(engine)
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var events struct {
		Endpoint string `json:"endpoint"`
		Topic    string `json:"topic"`
	}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if j, ok := strings.CutPrefix(a, "--kv-events-config="); ok {
			if err := json.Unmarshal([]byte(j), &events); err != nil {
				t.Fatal(err)
			}
		}
	}
	topic := strings.ReplaceAll(events.Topic, "$(POD_IP)", "10.0.0.7")
	if !strings.HasPrefix(topic, e.TopicFilter) {
		t.Errorf("topic %q does not pass the subscription filter %q", topic, e.TopicFilter)
	}
	adapter, err := engineadapter.NewAdapter("vllm")
	if err != nil {
		t.Fatal(err)
	}
	// An empty vLLM event batch: msgpack [ts 0.0, events [], data_parallel_rank nil].
	payload := []byte{0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 0xc0}
	pod, model, _, err := adapter.ParseMessage(&kvevents.RawMessage{Topic: topic, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	if pod != "10.0.0.7:8000" || model != "Qwen/Qwen3-8B" {
		t.Errorf("topic %q parses as pod %q model %q; want 10.0.0.7:8000 (the endpoint the picker scores) and Qwen/Qwen3-8B (the model requests carry)", topic, pod, model)
	}
}
