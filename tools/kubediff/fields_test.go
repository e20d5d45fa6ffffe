package kubediff

import (
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/xrd"
)

// The fuzzed field and value, as test/fuzz (setup_test.go) picks and sets
// them, so that corpus entries mean the same in both.

// xrdPaths are every field of the XRD's spec (arrays by their first item,
// maps by a key named "key") and the XR's metadata, sorted.
func xrdPaths() ([]string, error) {
	var def map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &def); err != nil {
		return nil, err
	}
	vs := def["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	paths := []string{"metadata.name", "metadata.namespace", "metadata.labels[crossplane.io/claim-name]", "metadata.labels[crossplane.io/claim-namespace]", "kind", "spec"}
	schemaPaths(spec, "spec", &paths)
	slices.Sort(paths)
	return paths, nil
}

func schemaPaths(s map[string]any, at string, out *[]string) {
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			*out = append(*out, at+"."+k)
			schemaPaths(v.(map[string]any), at+"."+k, out)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		*out = append(*out, at+"[0]")
		if s["x-kubernetes-preserve-unknown-fields"] != true {
			schemaPaths(items, at+"[0]", out)
		}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		*out = append(*out, at+"[key]")
		schemaPaths(ap, at+"[key]", out)
	}
}

// field is p when it is a field, else one of them by p's hash.
func (c *corpus) field(p string) string {
	if p == "" {
		return ""
	}
	if _, ok := slices.BinarySearch(c.paths, p); ok {
		return p
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	return c.paths[int(h.Sum32()%uint32(len(c.paths)))]
}

var (
	pathStep  = regexp.MustCompile(`^([^.\[]*)((?:\[[^\]]*\])*)`)
	pathIndex = regexp.MustCompile(`\[([^\]]*)\]`)
)

// setPath sets v at a path such as spec.models[0].env[1].name or
// metadata.labels[crossplane.io/claim-name] (a numeric [i] is an array
// index, any other [k] a map key), creating what is missing; nil deletes.
// It gives up on paths through values of another type.
func setPath(obj map[string]any, path string, v any) {
	type step struct {
		key   string
		index int // -1 for a key
	}
	var steps []step
	for rest := path; rest != ""; {
		m := pathStep.FindStringSubmatch(rest)
		if m == nil || m[0] == "" {
			return
		}
		if m[1] != "" {
			steps = append(steps, step{m[1], -1})
		}
		for _, b := range pathIndex.FindAllStringSubmatch(m[2], -1) {
			if i, err := strconv.Atoi(b[1]); err == nil && i >= 0 && i < 1024 {
				steps = append(steps, step{index: i})
			} else {
				steps = append(steps, step{key: b[1], index: -1})
			}
		}
		rest = strings.TrimPrefix(rest[len(m[0]):], ".")
	}
	var cur any = obj
	var assign func(any)
	for i, s := range steps {
		last := i == len(steps)-1
		fresh := func() any {
			if steps[i+1].index >= 0 {
				return make([]any, steps[i+1].index+1)
			}
			return map[string]any{}
		}
		switch c := cur.(type) {
		case map[string]any:
			if s.index >= 0 {
				return
			}
			if last {
				if v == nil {
					delete(c, s.key)
				} else {
					c[s.key] = v
				}
				return
			}
			if c[s.key] == nil {
				c[s.key] = fresh()
			}
			key := s.key
			assign = func(n any) { c[key] = n }
			cur = c[s.key]
		case []any:
			if s.index < 0 {
				return
			}
			if s.index >= len(c) {
				c = append(c, make([]any, s.index+1-len(c))...)
				assign(c)
			}
			if last {
				c[s.index] = v
				return
			}
			if c[s.index] == nil {
				c[s.index] = fresh()
			}
			l, idx := c, s.index
			assign = func(n any) { l[idx] = n }
			cur = c[s.index]
		default:
			return
		}
	}
}

// fieldSeeds are values at the fields that become the kinds beyond pod
// templates, for the fuzzer to break: taken by the function, and what the
// API server or a CRD holds them to.
var fieldSeeds = []struct{ path, value, path2, value2 string }{
	{"spec.routerConfig.ingress", `{"enabled": true, "host": "*.example.com", "tlsSecretName": "tls", "className": "nginx", "path": "/v1", "annotations": {"a/b": "c"}}`, "", ""},
	{"spec.routerConfig.httpRoute", `{"parentRefs": [{"name": "gw", "namespace": "gateways", "sectionName": "https"}], "hostnames": ["a.example.com", "*.example.com"], "path": "/v1"}`, "", ""},
	{"spec.routerConfig.service", `{"type": "NodePort", "nodePort": 30080, "port": 8080, "annotations": {"a/b": "c"}}`, "", ""},
	{"spec.routerConfig.service", `{"type": "LoadBalancer", "port": 80}`, "", ""},
	{"spec.networkPolicy", `{"enabled": true, "allowFrom": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}, {"namespaceSelector": {"matchLabels": {"team": "ml"}}}]}`, "", ""},
	{"spec.podDisruptionBudget", `{"minAvailable": "50%"}`, "spec.rollingUpdate", `{"maxSurge": "25%", "maxUnavailable": 0}`},
	{"spec.podDisruptionBudget", `{"maxUnavailable": 1}`, "", ""},
	{"spec.autoscaling", `{"type": "keda", "minReplicas": 1, "maxReplicas": 3, "prometheusAddress": "http://prometheus:9090", "threshold": "5"}`, "", ""},
	{"spec.autoscaling", `{"type": "hpa", "minReplicas": 1, "maxReplicas": 4}`, "", ""},
	{"spec.monitoring", `{"serviceMonitor": {"enabled": true, "interval": "15s", "labels": {"release": "prom"}}}`, "", ""},
	{"spec.monitoring", `{"serviceMonitor": {}, "dashboard": {"labels": {"grafana_dashboard": "1"}, "annotations": {"grafana_folder": "LLM"}}, "alerts": {"labels": {"release": "prom"}, "for": "10m", "waitingRequests": 5, "kvCacheUsagePercent": 80}}`, "spec.inferenceExtension", `{"parentRefs": [{"name": "gw"}]}`},
	{"spec.storage", `{"enabled": true, "size": "100Gi", "storageClassName": "fast", "accessModes": ["ReadWriteMany"]}`, "", ""},
	{"spec.lmcacheConfig", `{"enabled": true, "server": {"replicas": 1}}`, "spec.routerConfig.routerType", `"kvaware"`},
	{"spec.serviceAccountName", `"vllm"`, "spec.routerConfig.serviceAccountName", `"router"`},
	{"spec.model", "null", "spec.models", `[{"name": "a", "modelURL": "org/a"}, {"name": "b", "modelURL": "org/b", "replicas": 2}]`},
	{"metadata.name", `"a-very-long-stack-name-that-is-still-a-dns-subdomain-of-more-than-sixty-three-characters"`, "", ""},
	{"spec.routerConfig.ingress", `{"className": "nginx", "annotations": {"kubernetes.io/ingress.class": "nginx"}, "host": "llm.example.com", "path": "/"}`, "", ""},
	{"spec.routerConfig.httpRoute", `{"parentRefs": [{"name": "gw", "sectionName": "http"}, {"name": "gw", "sectionName": "https"}, {"name": "gw", "namespace": "other"}]}`, "", ""},
	{"spec.networkPolicy", `{"allowFrom": [{"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}}, {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}}]}`, "", ""},
	{"spec.storage", `{"enabled": true, "size": "1Gi", "accessModes": ["ReadWriteOncePod"]}`, "", ""},
	{"spec.rollingUpdate", `{"maxSurge": 1, "maxUnavailable": "10%"}`, "spec.deploymentStrategy", `"RollingUpdate"`},
	{"spec.routerConfig.service", `{"type": "LoadBalancer", "nodePort": 32767, "port": 65535}`, "", ""},
	{"spec.autoscaling", `{"type": "keda", "minReplicas": 2, "maxReplicas": 5, "idleReplicas": 0, "prometheusAddress": "http://p:9090", "fallback": {"failureThreshold": 3, "replicas": 2}}`, "", ""},
}

// multiNodeSeeds are values at the fields that become a multi-node model's
// LeaderWorkerSet, on example/stacks/multi-node.yaml, at the edges of what
// LWS's webhook takes (the function refuses the others).
var multiNodeSeeds = []struct{ path, value, path2, value2 string }{
	{"spec.rollingUpdate", `{"maxUnavailable": 0}`, "", ""},
	{"spec.rollingUpdate", `{"maxUnavailable": "10%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "34%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "10%", "maxSurge": "1%"}`, "spec.replicas", "3"},
	{"spec.rollingUpdate", `{"maxUnavailable": "33%", "maxSurge": "0%"}`, "spec.replicas", "3"},
	{"spec.replicas", "1073741823", "", ""},
	{"spec.replicas", "1073741824", "", ""},
	{"spec.replicas", "0", "spec.rollingUpdate", `{"maxUnavailable": 0}`},
}
