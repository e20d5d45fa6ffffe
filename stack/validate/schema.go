package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// The XRD's own rules on single fields, as the API server applies them to
// the spec: maxLength, minLength, pattern and enum of strings, minimum and
// maximum of numbers, maxItems and minItems of arrays, maxProperties and
// required fields of objects. `crossplane render` does not apply the XRD, so the function
// applies the rules of the XRD it ships (xrd/definition.yaml, generated from
// the Go types) itself, read from the XRD so a new rule is never forgotten.
// The XRD's CEL rules, which span fields, are checked by hand in validate.go
// and the other validation files; stack/xrd_rules_test.go walks every rule of
// the XRD, CEL included, and checks the function refuses what it refuses.
//
// Checks written by hand give the better message: a rule broken at a path
// that a hand-written error already names adds nothing.

// schemaNode is the part of an OpenAPI v3 schema the rules read.
type schemaNode struct {
	Properties           map[string]*schemaNode `json:"properties"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	MaxLength            *int64                 `json:"maxLength"`
	MinLength            *int64                 `json:"minLength"`
	Pattern              string                 `json:"pattern"`
	Enum                 []any                  `json:"enum"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	MaxItems             *int64                 `json:"maxItems"`
	MinItems             *int64                 `json:"minItems"`
	MaxProperties        *int64                 `json:"maxProperties"`
	Required             []string               `json:"required"`
	PreserveUnknown      bool                   `json:"x-kubernetes-preserve-unknown-fields"`

	additional *schemaNode    // AdditionalProperties, when it is a schema
	pattern    *regexp.Regexp // Pattern, compiled
	enum       []string       // Enum, of a string field
}

// specSchema is the schema of the XRD's spec, loaded once.
var specSchema = sync.OnceValues(func() (*schemaNode, error) {
	return loadSpecSchema(xrd.Definition)
})

func loadSpecSchema(definition []byte) (*schemaNode, error) {
	j, err := yaml.YAMLToJSON(definition)
	if err != nil {
		return nil, fmt.Errorf("cannot read the XRD: %w", err)
	}
	var d struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec *schemaNode `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(j, &d); err != nil {
		return nil, fmt.Errorf("cannot decode the XRD: %w", err)
	}
	if len(d.Spec.Versions) != 1 || d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec == nil {
		return nil, fmt.Errorf("the XRD has no single version with a spec schema")
	}
	s := d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec
	if err := s.compile(); err != nil {
		return nil, err
	}
	return s, nil
}

// compile prepares a schema and every schema below it.
func (n *schemaNode) compile() error {
	if n.Pattern != "" {
		re, err := regexp.Compile(n.Pattern)
		if err != nil {
			return fmt.Errorf("cannot compile the XRD's pattern %s: %w", n.Pattern, err)
		}
		n.pattern = re
	}
	for _, e := range n.Enum {
		if s, ok := e.(string); ok {
			n.enum = append(n.enum, s)
		}
	}
	if len(n.AdditionalProperties) > 0 && n.AdditionalProperties[0] == '{' {
		n.additional = &schemaNode{}
		if err := json.Unmarshal(n.AdditionalProperties, n.additional); err != nil {
			return fmt.Errorf("cannot decode the XRD's additionalProperties: %w", err)
		}
	}
	for _, c := range n.children() {
		if err := c.compile(); err != nil {
			return err
		}
	}
	return nil
}

func (n *schemaNode) children() []*schemaNode {
	var cs []*schemaNode
	for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
		cs = append(cs, n.Properties[k])
	}
	if n.Items != nil {
		cs = append(cs, n.Items)
	}
	if n.additional != nil {
		cs = append(cs, n.additional)
	}
	return cs
}

// A violation is a rule of the XRD that a field breaks.
type violation struct {
	Path    string
	Message string
}

// SchemaViolations checks the spec, as written (without Crossplane's own
// fields), against the XRD's rules on single fields, in path order.
func SchemaViolations(spec map[string]any) []violation {
	s, err := specSchema()
	if err != nil {
		// The embedded XRD is a constant of the build; fn's tests load it.
		return []violation{{"spec", "the function cannot read the XRD it ships: " + err.Error()}}
	}
	var vs []violation
	s.check("spec", spec, &vs)
	return vs
}

func (n *schemaNode) check(path string, v any, vs *[]violation) {
	add := func(format string, args ...any) {
		*vs = append(*vs, violation{path, path + " " + fmt.Sprintf(format, args...)})
	}
	switch v := v.(type) {
	case string:
		if l := int64(utf8.RuneCountInString(v)); n.MaxLength != nil && l > *n.MaxLength {
			add("is %d characters long: at most %d are allowed; shorten it", l, *n.MaxLength)
		} else if n.MinLength != nil && l < *n.MinLength {
			add("%s is too short: at least %d characters are required", resolve.ClipQuote(v), *n.MinLength)
		}
		if n.pattern != nil && !n.pattern.MatchString(v) {
			add("%s is invalid: %s", resolve.ClipQuote(v), patternRule(n.Pattern))
		}
		if len(n.Enum) > 0 && !slices.Contains(n.enum, v) {
			add("%s is not supported: use one of %s", resolve.ClipQuote(v), strings.Join(slices.DeleteFunc(slices.Clone(n.enum), func(s string) bool { return s == "" }), ", "))
		}
	case float64:
		switch {
		case n.Minimum != nil && v < *n.Minimum && *n.Minimum == 0:
			add("%s is invalid: must be 0 or more", Number(v))
		case n.Minimum != nil && v < *n.Minimum:
			add("%s is invalid: must be at least %s", Number(v), Number(*n.Minimum))
		case n.Maximum != nil && v > *n.Maximum:
			add("%s is invalid: must be at most %s", Number(v), Number(*n.Maximum))
		}
	case []any:
		if l := int64(len(v)); n.MaxItems != nil && l > *n.MaxItems {
			add("has %d items: at most %d are allowed; remove some", l, *n.MaxItems)
		} else if n.MinItems != nil && l < *n.MinItems {
			add("has %d items: at least %d are required", l, *n.MinItems)
		}
		if n.Items == nil || n.Items.PreserveUnknown {
			return
		}
		for i, item := range v {
			n.Items.check(fmt.Sprintf("%s[%d]", path, i), item, vs)
		}
	case map[string]any:
		if l := int64(len(v)); n.MaxProperties != nil && l > *n.MaxProperties {
			add("has %d entries: at most %d are allowed; remove some", l, *n.MaxProperties)
		}
		if n.PreserveUnknown && n.Properties == nil {
			return
		}
		keys := slices.Collect(maps.Keys(v))
		for _, k := range n.Required {
			if v[k] == nil && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch {
			case v[k] == nil && slices.Contains(n.Required, k):
				// The API server drops a null of a field that is not
				// nullable, then finds the field missing.
				*vs = append(*vs, violation{path + "." + k, requiredMessage(path, k)})
			case n.Properties[k] != nil:
				n.Properties[k].check(path+"."+k, v[k], vs)
			case n.additional != nil:
				n.additional.check(path+"["+k+"]", v[k], vs)
			}
		}
	}
}

// requiredMessage is the message of a required field k missing from the
// object at path.
func requiredMessage(path, k string) string {
	if path == "spec" {
		return fmt.Sprintf("%s.%s is required: set it", path, k)
	}
	return fmt.Sprintf("%s.%s is required: set it, or remove %s", path, k, path)
}

// patternRules explain the XRD's patterns to a person.
var patternRules = map[string]string{
	`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`: "must be a Kubernetes quantity such as 4Gi or 500m",
	`^([01](\.[0-9]+)?|\.[0-9]+)?$`:            `must be a number greater than 0 and at most 1, e.g. "0.9"`,
	`^[0-9]*$`:                                 `must be a whole number, e.g. "1"`,
	`^v?[0-9]+[.][0-9]+[.][0-9]+([.][0-9]+)?$`: "must be a release number such as 0.9.2",
	`^[A-Za-z0-9!#$%&'*+.^_|~-]*$`:             "must be an HTTP header name: use letters, digits and !#$%&'*+.^_|~-, e.g. x-user-id",
	`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`:          "must be a DNS label: lower case letters, digits and '-', starting and ending with a letter or digit",
	`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`:                       "must be a DNS subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit",
	`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`: "must be a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s",
}

func patternRule(pattern string) string {
	if r, ok := patternRules[pattern]; ok {
		return r
	}
	return "must match the pattern " + pattern
}

// Number formats a JSON number for a message.
func Number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// NamesPath reports whether a message names path: path followed by
// something that does not continue it (so "spec.models" is not named by
// "spec.models[1].name"), or its last two fields after the block they are
// in, as messages about an engine block say it ("spec.models[1]:
// vllmConfig.tensorParallelSize ...").
func NamesPath(msg, path string) bool {
	if hasPathToken(msg, path) {
		return true
	}
	parts := strings.Split(path, ".")
	if len(parts) < 3 {
		return false
	}
	block, rel := strings.Join(parts[:len(parts)-2], "."), strings.Join(parts[len(parts)-2:], ".")
	return hasPathToken(msg, rel) && strings.Contains(msg, block)
}

// hasPathToken reports whether msg holds path, not as part of a longer path.
func hasPathToken(msg, path string) bool {
	const pathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.["
	for i := 0; i < len(msg); {
		j := strings.Index(msg[i:], path)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(path)
		if (start == 0 || !strings.ContainsRune(pathChars, rune(msg[start-1]))) && (end == len(msg) || !strings.ContainsRune(pathChars, rune(msg[end]))) {
			return true
		}
		i = start + 1
	}
	return false
}

// AddSchemaViolations adds the XRD's rules the spec breaks that no error
// found so far names. They go first, as the API server would report them
// first: a refusal's message is bounded, and a long list of errors they
// cause (every item of a list that is too long) must not hide them.
func (f *Findings) AddSchemaViolations(spec map[string]any) {
	var add []string
	for _, v := range SchemaViolations(spec) {
		if !slices.ContainsFunc(f.Errors, func(e string) bool { return NamesPath(e, v.Path) }) {
			add = append(add, v.Message)
		}
	}
	f.Errors = append(add, f.Errors...)
}
