package stack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
)

// checkPickerPrecise checks a picker configuration with the precise
// prefix-cache pipeline against the facts (PRECISE-PREFIX.md,
// epp-plugin-parameters.tsv) and against the engines its pool selects: the
// parameters exist at the release; the scorer reads the producer's match;
// the notification source feeds the producer; each engine runs a vLLM with
// the render endpoints, publishes its KV events with the topic the picker
// parses and where it dials, with the picker's block size and hash seed;
// and the token-producer's URL is a Service of those engines on their API
// port. Nothing for a configuration without the producer.
func checkPickerPrecise(r rendered, picker string, v upVersion, vllm string, cfg map[string]any, pool unstructured.Unstructured, selected []appsv1.Deployment) []string {
	params := map[string]map[string]any{}
	ps, _ := cfg["plugins"].([]any)
	for _, p := range ps {
		p := p.(map[string]any)
		typ, _ := p["type"].(string)
		m, _ := p["parameters"].(map[string]any)
		params[typ] = m
	}
	producer, ok := params["precise-prefix-cache-producer"]
	if !ok {
		return nil
	}
	var problems []string
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "epp-plugin-parameters.tsv"), 6)
	if err != nil {
		return []string{err.Error()}
	}
	for _, typ := range []string{"token-producer", "precise-prefix-cache-producer", "prefix-cache-scorer"} {
		var paths []string
		leaves("", params[typ], &paths)
		sort.Strings(paths)
		for _, path := range paths {
			if !slices.ContainsFunc(rows, func(row []string) bool {
				return row[0] == picker && row[1] == typ && row[2] == path && v.in(mustUpVersion(row[3]), mustUpVersion(row[4]))
			}) {
				problems = append(problems, fmt.Sprintf("configuration: %s %v's %s has no parameter %s", picker, v, typ, path))
			}
		}
	}
	if got := stringAt(params["prefix-cache-scorer"], "prefixMatchInfoProducerName"); got != "precise-prefix-cache-producer" {
		problems = append(problems, fmt.Sprintf("configuration: the prefix-cache-scorer reads the match of %q, not the precise producer's: it scores by its own estimate", got))
	}
	fed := false
	dl, _ := cfg["dataLayer"].(map[string]any)
	srcs, _ := dl["sources"].([]any)
	for _, s := range srcs {
		s := s.(map[string]any)
		exs, _ := s["extractors"].([]any)
		if s["pluginRef"] == "endpoint-notification-source" && slices.ContainsFunc(exs, func(e any) bool {
			return e.(map[string]any)["pluginRef"] == "precise-prefix-cache-producer"
		}) {
			fed = true
		}
	}
	if !fed {
		problems = append(problems, "configuration: no endpoint-notification-source feeds the precise-prefix-cache-producer: it subscribes to no engine")
	}
	if d, _, _ := unstructured.NestedBool(producer, "kvEventsConfig", "discoverPods"); !d {
		problems = append(problems, "configuration: kvEventsConfig.discoverPods is not true: the producer's Extract subscribes to no endpoint (extractor.go:36@v0.10.0)")
	}
	blockSize := numberAt(producer, "tokenProcessorConfig", "blockSizeTokens")
	seed := stringAt(producer, "tokenProcessorConfig", "hashSeed")
	filter := stringAt(producer, "kvEventsConfig", "topicFilter")
	socket := numberAt(producer, "kvEventsConfig", "podDiscoveryConfig", "socketPort")
	model := stringAt(params["token-producer"], "modelName")
	if mustUpVersion(vllm).in(upVersion{}, upVersion{0, 15, 99}) {
		problems = append(problems, fmt.Sprintf("the token-producer calls the engines' render endpoints, which vLLM %s does not serve (from 0.16.0)", vllm))
	}
	ports, _, _ := unstructured.NestedSlice(pool.Object, "spec", "targetPorts")
	target := int64(0)
	if len(ports) > 0 {
		target = numberAt(ports[0].(map[string]any), "number")
	}
	for _, d := range selected {
		c, _ := containerNamed(d, build.EngineContainer)
		var events struct {
			Enable    bool   `json:"enable_kv_cache_events"`
			Publisher string `json:"publisher"`
			Endpoint  string `json:"endpoint"`
			Topic     string `json:"topic"`
		}
		block := ""
		for _, a := range c.Args {
			if j, ok := strings.CutPrefix(a, "--kv-events-config="); ok {
				if err := json.Unmarshal([]byte(j), &events); err != nil {
					problems = append(problems, fmt.Sprintf("%s: --kv-events-config: %v", d.Name, err))
				}
			}
			if b, ok := strings.CutPrefix(a, "--block-size="); ok {
				block = b
			}
		}
		if !events.Enable || events.Publisher != "zmq" {
			problems = append(problems, fmt.Sprintf("%s publishes no KV events over ZeroMQ (enable_kv_cache_events %v, publisher %q)", d.Name, events.Enable, events.Publisher))
		}
		if want := "tcp://*:" + strconv.FormatInt(socket, 10); events.Endpoint != want {
			problems = append(problems, fmt.Sprintf("%s publishes at %q, and the picker dials its pod at port %d", d.Name, events.Endpoint, socket))
		}
		// kv@<pod>@<model>: the model is the one the requests carry, the
		// pod the endpoint's address:port (KVEventsTopic).
		if want := filter + "$(POD_IP):" + strconv.FormatInt(target, 10) + "@" + model; events.Topic != want {
			problems = append(problems, fmt.Sprintf("%s's KV events topic %q, want %q", d.Name, events.Topic, want))
		}
		if len(c.Env) == 0 || c.Env[0].Name != "POD_IP" {
			problems = append(problems, fmt.Sprintf("%s: $(POD_IP) in the topic needs POD_IP defined first", d.Name))
		}
		if block != strconv.FormatInt(blockSize, 10) {
			problems = append(problems, fmt.Sprintf("%s's --block-size %q differs from the picker's blockSizeTokens %d", d.Name, block, blockSize))
		}
		if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PYTHONHASHSEED" }); i < 0 || c.Env[i].Value != seed {
			problems = append(problems, fmt.Sprintf("%s's PYTHONHASHSEED differs from the picker's hashSeed %q", d.Name, seed))
		}
	}
	// The token-producer's URL is a Service of the stack that selects the
	// pool's engines and reaches their API port.
	u, err := url.Parse(stringAt(params["token-producer"], "vllm", "url"))
	if err != nil {
		return append(problems, "configuration: the token-producer's vllm.url: "+err.Error())
	}
	host, _, _ := strings.Cut(u.Hostname(), ".")
	reaches := false
	for _, s := range r.services {
		if s.Name != host || len(selected) == 0 || !k8slabels.SelectorFromSet(s.Spec.Selector).Matches(k8slabels.Set(selected[0].Spec.Template.Labels)) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if strconv.Itoa(int(p.Port)) == u.Port() && int64(p.TargetPort.IntValue()) == target {
				reaches = true
			}
		}
	}
	if !reaches {
		problems = append(problems, fmt.Sprintf("configuration: the token-producer's vllm.url %s is no Service port of the pool's engines' API", u))
	}
	return problems
}

// numberAt is the number at path, however it was decoded (a YAML
// configuration's numbers are float64, an object's int64); 0 when none.
func numberAt(m map[string]any, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
