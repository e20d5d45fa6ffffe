package stack

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// The XRD refuses a spec at the API server; `crossplane render` and a
// function called with a spec the XRD never saw do not. TestXRDRules walks
// every rule of the generated XRD (xrd/definition.yaml) on the spec, makes a
// value that breaks it, and checks the function refuses the stack with a
// Fatal message that names the field. A rule added to the Go types is walked
// without a change here; a CEL rule needs a case in celCases, and the test
// fails until it has one.

// step is one step of a path into an XR: an object key, an array index, or
// a key of a map (additionalProperties).
type step struct {
	key   string
	index int
	kind  byte // '.' object field, '#' array item, '@' map entry
}

type fieldPath []step

func (p fieldPath) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s.kind {
		case '#':
			fmt.Fprintf(&b, "[%d]", s.index)
		case '@':
			fmt.Fprintf(&b, "[%s]", s.key)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func (p fieldPath) field(k string) fieldPath {
	return append(slices.Clone(p), step{key: k, kind: '.'})
}

func (p fieldPath) item() fieldPath { return append(slices.Clone(p), step{kind: '#'}) }

func (p fieldPath) entry(k string) fieldPath {
	return append(slices.Clone(p), step{key: k, kind: '@'})
}

// set sets v at path p below the XR, creating objects and one-item arrays;
// nil deletes the field.
func (p fieldPath) set(xr map[string]any, v any) {
	var cur any = xr
	for i, s := range p {
		last := i == len(p)-1
		next := func(existing any) any {
			if last {
				return v
			}
			if existing != nil {
				return existing
			}
			if p[i+1].kind == '#' {
				return []any{nil}
			}
			return map[string]any{}
		}
		switch s.kind {
		case '#':
			l := cur.([]any)
			l[s.index] = next(l[s.index])
			cur = l[s.index]
		default:
			m := cur.(map[string]any)
			if last && v == nil {
				delete(m, s.key)
				return
			}
			m[s.key] = next(m[s.key])
			cur = m[s.key]
		}
	}
}

// xrdRule is a value that breaks one rule of the XRD at one field.
type xrdRule struct {
	rule  string    // e.g. "maxLength 4096"
	at    fieldPath // where the value goes
	value any
	patch map[string]any // instead of value: fields set below at
	names string         // the field the message must name; at when empty
}

// celCases break each CEL rule of the XRD, by rule: fields set below the
// object the rule is on, and the field the message names (relative to that
// object; "" for the object itself).
var celCases = map[string][]struct {
	patch map[string]any
	names string
}{
	"!(has(self.model) && has(self.models))": {
		{patch: map[string]any{"models": []any{map[string]any{"name": "b", "modelURL": "org/b"}}}, names: "model"},
		// has() is true of an empty list.
		{patch: map[string]any{"models": []any{}}, names: "model"},
	},
	"has(self.huggingFace) != has(self.path)": {
		{patch: map[string]any{"huggingFace": map[string]any{"repo": "org/a"}, "path": "/data/a"}},
		{patch: map[string]any{"huggingFace": nil, "path": nil}},
	},
	"has(self.model) || (has(self.models) && size(self.models) > 0)": {
		{patch: map[string]any{"model": nil}, names: "model"},
		{patch: map[string]any{"model": nil, "models": []any{}}, names: "model"},
	},
	"!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas": {
		{patch: map[string]any{"minReplicas": 3, "maxReplicas": 2}},
		// The XRD's rule holds whether or not the autoscaler is enabled.
		{patch: map[string]any{"enabled": false, "minReplicas": 3, "maxReplicas": 2}},
	},
	"(has(self.modelURL) && size(self.modelURL) > 0) || (has(self.path) && size(self.path) > 0)": {
		{patch: map[string]any{"modelURL": nil, "path": nil}},
		{patch: map[string]any{"modelURL": "", "path": ""}},
	},
	"!has(self.enableTool) || !self.enableTool || (has(self.toolCallParser) && size(self.toolCallParser) > 0)": {
		{patch: map[string]any{"enableTool": true}, names: "toolCallParser"},
		{patch: map[string]any{"enableTool": true, "toolCallParser": ""}, names: "toolCallParser"},
	},
	"!(has(self.minAvailable) && has(self.maxUnavailable))": {
		{patch: map[string]any{"minAvailable": 1, "maxUnavailable": 1}},
		{patch: map[string]any{"enabled": false, "minAvailable": "50%", "maxUnavailable": 0}},
	},
	"!self.matches('^([01]([.][0-9]+)?|[.][0-9]+)$') || (double(self) > 0.0 && double(self) <= 1.0)": {
		{patch: map[string]any{"": "1.5"}}, {patch: map[string]any{"": "0"}}, {patch: map[string]any{"": ".0"}}, {patch: map[string]any{"": "1.01"}},
	},
	"!has(self.prefixMinMatchLength) || (has(self.routerType) && self.routerType == 'prefixaware')": {
		{patch: map[string]any{"prefixMinMatchLength": 8}, names: "prefixMinMatchLength"},
		{patch: map[string]any{"prefixMinMatchLength": 0}, names: "prefixMinMatchLength"},
		{patch: map[string]any{"routerType": "kvaware", "prefixMinMatchLength": 8}, names: "prefixMinMatchLength"},
	},
	"(!has(self.lmcacheControllerPort) && !has(self.lmcacheControllerReplyPort) && !has(self.lmcacheControllerHeartbeatPort) && !has(self.kvAwareThreshold)) || (has(self.routerType) && self.routerType == 'kvaware')": {
		{patch: map[string]any{"lmcacheControllerPort": 9100}, names: "lmcacheControllerPort"},
		{patch: map[string]any{"lmcacheControllerReplyPort": 9101}, names: "lmcacheControllerReplyPort"},
		{patch: map[string]any{"lmcacheControllerHeartbeatPort": 9102}, names: "lmcacheControllerHeartbeatPort"},
		{patch: map[string]any{"routerType": "session", "kvAwareThreshold": 5}, names: "kvAwareThreshold"},
	},
	"!has(self.routerType) || self.routerType != 'kvaware' || ((!has(self.replicas) || self.replicas <= 1) && (!has(self.autoscaling) || (has(self.autoscaling.enabled) && !self.autoscaling.enabled)))": {
		{patch: map[string]any{"routerType": "kvaware", "replicas": 2}, names: "replicas"},
		{patch: map[string]any{"routerType": "kvaware", "autoscaling": map[string]any{"maxReplicas": 2}}, names: "autoscaling"},
		{patch: map[string]any{"routerType": "kvaware", "autoscaling": map[string]any{}}, names: "autoscaling"},
		{patch: map[string]any{"routerType": "kvaware", "autoscaling": map[string]any{"enabled": true, "maxReplicas": 1}}, names: "autoscaling"},
	},
	"!has(self.nodePort) || (has(self.type) && (self.type == 'NodePort' || self.type == 'LoadBalancer'))": {
		{patch: map[string]any{"nodePort": 30080}, names: "nodePort"},
		{patch: map[string]any{"type": "ClusterIP", "nodePort": 30080}, names: "nodePort"},
	},
	"!has(self.emptyDir) || !has(self.existingClaimName) || size(self.existingClaimName) == 0": {
		{patch: map[string]any{"emptyDir": map[string]any{}, "existingClaimName": "cache"}},
		{patch: map[string]any{"emptyDir": map[string]any{"sizeLimit": "1Gi"}, "existingClaimName": "cache"}},
	},
	"!has(self.existingClaimName) || size(self.existingClaimName) == 0 || (!has(self.size) && !has(self.storageClassName) && !has(self.accessModes))": {
		{patch: map[string]any{"existingClaimName": "cache", "size": "1Gi"}, names: "existingClaimName"},
		{patch: map[string]any{"existingClaimName": "cache", "storageClassName": "fast"}, names: "existingClaimName"},
		{patch: map[string]any{"existingClaimName": "cache", "accessModes": []any{"ReadWriteMany"}}, names: "existingClaimName"},
		{patch: map[string]any{"existingClaimName": "cache", "accessModes": []any{}}, names: "existingClaimName"},
	},
	"has(self.emptyDir) != has(self.persistentVolumeClaim)": {
		{patch: map[string]any{"": map[string]any{}}},
		{patch: map[string]any{"emptyDir": map[string]any{}, "persistentVolumeClaim": map[string]any{"size": "1Gi"}}},
	},
	"!has(self.claimName) || size(self.claimName) == 0 || (!has(self.size) && !has(self.storageClassName) && !has(self.accessModes))": {
		{patch: map[string]any{"claimName": "kv", "size": "1Gi"}, names: "claimName"},
		{patch: map[string]any{"claimName": "kv", "storageClassName": "fast"}, names: "claimName"},
		{patch: map[string]any{"claimName": "kv", "accessModes": []any{"ReadWriteMany"}}, names: "claimName"},
	},
}

// patternBreakers are tried on every pattern; each that the pattern refuses
// is a case. They include what strconv.ParseFloat, resource.ParseQuantity or
// the version parser accept and the XRD does not.
var patternBreakers = []string{
	"-", "x", "NaN", "nan", "Inf", "+Inf", "0x1p-1", "0X.8p0", "1e-1", "+0.5", "5e-1", " 1", "1 ", "1_0", "é", "0.5\n",
	"0.8.3rc1", "v0.8", "0.8.3-cu128", "V1.2.3", "A", "a..b", "-a", "a-", "1.5Gi ", "30S", "1h1h", "5m30", "0x10", "١",
	// Values a program would read as an option, or that split into two
	// arguments in a shell (issue 18).
	"--trust-remote-code", "-h", "org/a b", "a/b/c", "rel/path", "/a\nb",
}

// validSample is a value of a field that passes the function's own checks,
// to be made too long: digits for quantities and numbers, letters
// otherwise.
func validSample(at fieldPath, pattern string) string {
	switch pattern {
	case `^([01](\.[0-9]+)?|\.[0-9]+)?$`:
		return "0.9"
	case `^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$`:
		return "0.9.2"
	case `^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`:
		return "30s"
	}
	switch at[len(at)-1].key {
	case "cpu", "memory", "cpuLimit", "memoryLimit", "size", "shmSize", "sizeLimit", "cpuOffloadingBufferSize", "diskOffloadingBufferSize", "threshold", "gpu":
		return "1"
	}
	return "a"
}

// pad makes s n characters long, repeating its last character after the
// first one (so "0.9" becomes "0.99999", "1" becomes "1111").
func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(s[len(s)-1:], n-len(s))
}

// xrdRules walks a schema below at and returns a case per rule.
func xrdRules(t *testing.T, s map[string]any, at fieldPath) []xrdRule {
	t.Helper()
	var rules []xrdRule
	num := func(k string) (float64, bool) {
		v, ok := s[k].(float64)
		return v, ok
	}
	typ, _ := s["type"].(string)
	pattern, _ := s["pattern"].(string)
	// Wrong types, as the API server refuses them.
	switch typ {
	case "string":
		rules = append(rules, xrdRule{rule: "type string", at: at, value: 7})
	case "integer", "number":
		rules = append(rules, xrdRule{rule: "type " + typ, at: at, value: "7"})
	case "boolean":
		rules = append(rules, xrdRule{rule: "type boolean", at: at, value: "yes"})
	case "object":
		if len(at) > 1 {
			rules = append(rules, xrdRule{rule: "type object", at: at, value: "x"})
		}
	case "array":
		rules = append(rules, xrdRule{rule: "type array", at: at, value: "x"})
	}
	if n, ok := num("maxLength"); ok {
		long := pad(validSample(at, pattern), int(n)+1)
		rules = append(rules, xrdRule{rule: "maxLength " + validate.Number(n), at: at, value: long})
		// Characters, not bytes: n two-byte characters fit.
		if pattern == "" && validSample(at, pattern) == "a" {
			rules = append(rules, xrdRule{rule: "maxLength " + validate.Number(n) + " in characters", at: at, value: strings.Repeat("é", int(n)+1)})
		}
	}
	if n, ok := num("minLength"); ok && n > 0 {
		rules = append(rules, xrdRule{rule: "minLength " + validate.Number(n), at: at, value: pad("5", int(n)-1)[:int(n)-1]})
	}
	if pattern != "" {
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Fatalf("%s: pattern %s: %v", at, pattern, err)
		}
		maxLen, hasMax := num("maxLength")
		for _, b := range patternBreakers {
			if !re.MatchString(b) && (!hasMax || float64(len([]rune(b))) <= maxLen) {
				rules = append(rules, xrdRule{rule: "pattern " + pattern, at: at, value: b})
			}
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		rules = append(rules, xrdRule{rule: "enum", at: at, value: "Unknown-Value"})
	}
	if n, ok := num("minimum"); ok {
		rules = append(rules, xrdRule{rule: "minimum " + validate.Number(n), at: at, value: n - 1})
	}
	if n, ok := num("maximum"); ok {
		rules = append(rules, xrdRule{rule: "maximum " + validate.Number(n), at: at, value: n + 1})
	}
	if n, ok := num("maxItems"); ok {
		items := make([]any, int(n)+1)
		for i := range items {
			items[i] = sampleItem(s, i)
		}
		rules = append(rules, xrdRule{rule: "maxItems " + validate.Number(n), at: at, value: items})
	}
	if n, ok := num("minItems"); ok && n > 0 {
		rules = append(rules, xrdRule{rule: "minItems " + validate.Number(n), at: at, value: []any{}})
	}
	if _, ok := s["maxProperties"]; ok {
		t.Errorf("%s: maxProperties has no case in xrdRules: add one", at)
	}
	if vs, ok := s["x-kubernetes-validations"].([]any); ok {
		for _, v := range vs {
			rule, _ := v.(map[string]any)["rule"].(string)
			cases, ok := celCases[rule]
			if !ok {
				t.Errorf("%s: the XRD's CEL rule %q has no case in celCases: add a patch that breaks it", at, rule)
			}
			for _, c := range cases {
				names := at
				if c.names != "" {
					names = at.field(c.names)
				}
				rules = append(rules, xrdRule{rule: "CEL " + rule, at: at, patch: c.patch, names: names.String()})
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			rules = append(rules, xrdRules(t, props[k].(map[string]any), at.field(k))...)
		}
	}
	if items, ok := s["items"].(map[string]any); ok && s["x-kubernetes-preserve-unknown-fields"] != true {
		rules = append(rules, xrdRules(t, items, at.item())...)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		rules = append(rules, xrdRules(t, ap, at.entry(sampleKey(at)))...)
	}
	return rules
}

// sampleKey is a key of a map field: a resource name for resource lists.
func sampleKey(at fieldPath) string {
	if k := at[len(at)-1].key; k == "limits" || k == "requests" {
		return "cpu"
	}
	return "key"
}

// sampleItem is item i of an array that is too long: distinct strings, or
// objects with their required fields set.
func sampleItem(s map[string]any, i int) any {
	items, _ := s["items"].(map[string]any)
	if t, _ := items["type"].(string); t == "string" {
		return "item" + strconv.Itoa(i)
	}
	o := map[string]any{}
	req, _ := items["required"].([]any)
	for _, r := range req {
		o[r.(string)] = "item" + strconv.Itoa(i)
	}
	return o
}

// baseXR is the stack a case changes: one model (spec.model), or a list
// (spec.models) when the case is below spec.models.
func baseXR(at fieldPath) map[string]any {
	xr := minimalXR()
	if len(at) > 1 && at[1].key == "models" {
		stacktest.SetPath(xr, "spec.model", nil)
		xr["spec"].(map[string]any)["models"] = []any{map[string]any{"name": "m", "modelURL": "org/m"}}
	}
	return xr
}

// withoutIndexes drops the indexes of a path: the decoder's messages name
// spec.models.maxNumSeqs for spec.models[0].maxNumSeqs.
var indexes = regexp.MustCompile(`\[[^\]]*\]`)

func TestXRDRules(t *testing.T) {
	var schema map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &schema); err != nil {
		t.Fatal(err)
	}
	vs := schema["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	rules := xrdRules(t, spec, fieldPath{{key: "spec", kind: '.'}})
	counts := map[string]int{}
	for _, r := range rules {
		counts[strings.Fields(r.rule)[0]]++
	}
	t.Logf("%d cases: %v", len(rules), counts)
	if counts["CEL"] == 0 || counts["maxLength"] < 50 || counts["pattern"] < 10 {
		t.Fatalf("the walk found too few rules (%v): is xrd/definition.yaml the generated XRD?", counts)
	}
	for _, r := range rules {
		xr := baseXR(r.at)
		if r.patch != nil {
			for k, v := range r.patch {
				p := r.at
				if k != "" {
					p = p.field(k)
				}
				p.set(xr, v)
			}
		} else {
			r.at.set(xr, r.value)
		}
		names := r.names
		if names == "" {
			names = r.at.String()
		}
		value := fmt.Sprint(r.value)
		if len(value) > 40 {
			value = value[:40] + "..."
		}
		if r.patch != nil {
			value = fmt.Sprint(r.patch)
		}
		msg := refusal(t, xr)
		switch {
		case msg == "":
			t.Errorf("%s (%s) = %s: the XRD refuses it, the function composed the stack", r.at, r.rule, value)
		case !validate.NamesPath(msg, names) && !strings.Contains(msg, indexes.ReplaceAllString(names, "")):
			t.Errorf("%s (%s) = %s: the Fatal message does not name %s: %s", r.at, r.rule, value, names, msg)
		}
	}
}

// requiredCase is an object of the XRD with every required field set but
// one.
type requiredCase struct {
	at     fieldPath // the object
	field  string    // the required field left out
	object map[string]any
}

// requiredCases walks a schema below at and returns a case per required
// field of every object.
func requiredCases(s map[string]any, at fieldPath) []requiredCase {
	var cases []requiredCase
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	for _, r := range req {
		o := sampleObject(s)
		delete(o, r.(string))
		cases = append(cases, requiredCase{at: at, field: r.(string), object: o})
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		cases = append(cases, requiredCases(props[k].(map[string]any), at.field(k))...)
	}
	if items, ok := s["items"].(map[string]any); ok && s["x-kubernetes-preserve-unknown-fields"] != true {
		cases = append(cases, requiredCases(items, at.item())...)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		cases = append(cases, requiredCases(ap, at.entry(sampleKey(at)))...)
	}
	return cases
}

// sampleObject is an object of schema s with its required fields set to a
// value of their type (an enum's first value, a minimum), recursively.
func sampleObject(s map[string]any) map[string]any {
	o := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	for _, r := range req {
		p, _ := props[r.(string)].(map[string]any)
		o[r.(string)] = sampleValue(p)
	}
	return o
}

func sampleValue(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		for _, v := range e {
			if v != "" {
				return v
			}
		}
	}
	switch s["type"] {
	case "string":
		return "a"
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	}
	return sampleObject(s)
}

// withRequired sets the required fields of every object above at in xr
// that it lacks, as sampleObject does, so only the case's field is
// missing.
func withRequired(xr, spec map[string]any, at fieldPath) {
	s := spec
	for i := 1; i < len(at) && s != nil; i++ {
		switch at[i].kind {
		case '#':
			s, _ = s["items"].(map[string]any)
		case '@':
			s, _ = s["additionalProperties"].(map[string]any)
		default:
			props, _ := s["properties"].(map[string]any)
			s, _ = props[at[i].key].(map[string]any)
		}
		if i == len(at)-1 {
			return
		}
		for k, v := range sampleObject(s) {
			if k != at[i+1].key && at[:i+1].field(k).get(xr) == nil {
				at[:i+1].field(k).set(xr, v)
			}
		}
	}
}

// get is the value at path p below the XR, nil when there is none.
func (p fieldPath) get(xr map[string]any) any {
	var cur any = xr
	for _, s := range p {
		switch c := cur.(type) {
		case []any:
			if s.kind != '#' || s.index >= len(c) {
				return nil
			}
			cur = c[s.index]
		case map[string]any:
			cur = c[s.key]
		default:
			return nil
		}
	}
	return cur
}

// TestXRDRequired: a field the XRD requires, left out of its object or
// null (which the API server drops), is refused with the message of the
// XRD's rules (validate/schema.go), naming the field's full path: every required
// field of the XRD, found by walking it, so a new block needs no check by
// hand. The refusal names the field, in that message or a hand-written one.
func TestXRDRequired(t *testing.T) {
	var schema map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &schema); err != nil {
		t.Fatal(err)
	}
	vs := schema["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	cases := requiredCases(spec, fieldPath{{key: "spec", kind: '.'}})
	t.Logf("%d required fields", len(cases))
	var multiNode bool
	for _, c := range cases {
		multiNode = multiNode || c.at.field(c.field).String() == "spec.multiNode.podsPerReplica"
	}
	if len(cases) < 20 || !multiNode {
		t.Fatalf("the walk found %d required fields, spec.multiNode.podsPerReplica among them: %v: is xrd/definition.yaml the generated XRD?", len(cases), multiNode)
	}
	hand := map[string]bool{} // the fields a hand-written message names instead
	for _, c := range cases {
		path := c.at.field(c.field).String()
		want := fmt.Sprintf("%s is required: set it, or remove %s", path, c.at)
		if c.at.String() == "spec" {
			want = path + " is required: set it"
		}
		for _, null := range []bool{false, true} {
			o := maps.Clone(c.object)
			if null {
				o[c.field] = nil
			}
			xr := baseXR(c.at)
			withRequired(xr, spec, c.at)
			c.at.set(xr, o)
			found := false
			for _, v := range validate.SchemaViolations(xr["spec"].(map[string]any)) {
				if v.Path == path {
					found = true
					if v.Message != want {
						t.Errorf("%s (null %v): violation %q, want %q", path, null, v.Message, want)
					}
				}
			}
			if !found {
				t.Errorf("%s (null %v): left out, and no violation of the XRD's rules names it", path, null)
			}
			msg := refusal(t, xr)
			if !strings.Contains(msg, want) {
				hand[path] = true
			}
			switch {
			case msg == "":
				t.Errorf("%s (null %v): left out, the XRD refuses the stack, the function composed it", path, null)
			case !validate.NamesPath(msg, path) && !strings.Contains(msg, indexes.ReplaceAllString(path, "")):
				t.Errorf("%s (null %v): the Fatal message does not name it: %s", path, null, msg)
			}
		}
	}
	t.Logf("%d of them named by a hand-written message instead (internal/kubeapi's, mostly)", len(hand))
}
