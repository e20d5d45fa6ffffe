package helm2stack

import (
	"fmt"
	"strings"
)

// rule converts one key of the values (see table).
type rule struct {
	// key is the values key: "[]" stands for any item of a list, "*" for
	// any key of a map (routerSpec.route.<name>).
	key string
	do  func(c *converter, n node) error
}

// rules is table by key (filled by init: the table's conversions walk it).
var rules map[string]rule

func init() {
	rules = make(map[string]rule, len(table))
	for _, r := range table {
		if _, dup := rules[r.key]; dup {
			panic("helm2stack: two table entries for " + r.key)
		}
		rules[r.key] = r
	}
}

// hasRulesUnder reports whether the table has keys below prefix.
func hasRulesUnder(prefix string) bool {
	for k := range rules {
		if strings.HasPrefix(k, prefix+".") {
			return true
		}
	}
	return false
}

// drop reports a key the stack does not support, with docs/helm.md's reason,
// unless its value is empty (helm's unset: "", 0, false, {}, [] or null).
func drop(reason string) func(*converter, node) error {
	return dropUnless("", reason)
}

// dropUnless is drop, also keeping quiet when the value is same, what the
// stack does anyway (containerPort 8000, enableRouter true).
func dropUnless(same, reason string) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.empty() || (same != "" && fmt.Sprint(n.v) == same) {
			return nil
		}
		c.res.drop(n.path, reason)
		return nil
	}
}

// chartIgnores notes a key the chart's examples or tutorials set but its
// templates (0.1.12) do not read: nothing is lost.
func chartIgnores(why string) func(*converter, node) error {
	return func(c *converter, n node) error {
		if !n.empty() {
			c.res.note(n.path, "ignored, as by the chart: "+why)
		}
		return nil
	}
}

// str sets a non-empty string.
func str(set func(c *converter, s string)) func(*converter, node) error {
	return func(c *converter, n node) error {
		s, err := n.str()
		if err == nil && s != "" {
			set(c, s)
		}
		return err
	}
}

// scalar sets a non-empty string or number as a string (quantities, sizes).
func scalar(set func(c *converter, s string)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil {
			return nil
		}
		s, err := n.scalar()
		if err == nil && s != "" {
			set(c, s)
		}
		return err
	}
}

// integer sets an integer (or a string holding one).
func integer(set func(c *converter, v *int32)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil || n.v == "" {
			return nil
		}
		v, err := n.int32p()
		if err == nil {
			set(c, v)
		}
		return err
	}
}

// boolean sets a true or false.
func boolean(set func(c *converter, b bool)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil {
			return nil
		}
		b, err := n.boolean()
		if err == nil {
			set(c, b)
		}
		return err
	}
}

// object sets a Kubernetes-shaped value, decoded strictly into T.
func object[T any](set func(c *converter, v T)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.empty() {
			return nil
		}
		var v T
		if err := n.object(&v); err != nil {
			return err
		}
		set(c, v)
		return nil
	}
}

// stringMap sets a map of strings (labels, annotations).
func stringMap(set func(c *converter, m map[string]string)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.empty() {
			return nil
		}
		m, err := n.stringMap()
		if err == nil {
			set(c, m)
		}
		return err
	}
}

// stringList sets a list of strings or numbers (arguments).
func stringList(set func(c *converter, l []string)) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.empty() {
			return nil
		}
		l, err := n.strings()
		if err == nil {
			set(c, l)
		}
		return err
	}
}
