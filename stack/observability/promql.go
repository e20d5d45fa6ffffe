package observability

import (
	"slices"
	"strings"
)

// promqlKeywords are PromQL's keywords, aggregation operators and
// modifiers: words that are neither metric names nor functions (an
// aggregation may be followed by its by (…) before its "(").
var promqlKeywords = []string{
	"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "atan2",
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}

// MetricNames are the metric names a PromQL expression selects, in order,
// each once: a tokenizer enough for the expressions this package writes
// (and any plain PromQL): it skips strings, label matchers ({…}), ranges
// and subqueries ([…]), grouping label lists (after by, without, on,
// ignoring, group_left, group_right), numbers, functions (a word before
// "("), keywords and operators. What remains is a metric name.
func MetricNames(expr string) []string {
	var out []string
	labelList := false // the next (…) holds label names
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipTo(expr, i, '}')
		case c == '[':
			i = skipTo(expr, i, ']')
		case c == '(' && labelList:
			i = skipTo(expr, i, ')')
			labelList = false
		case isWordStart(c):
			j := i
			for j < len(expr) && isWordChar(expr[j]) {
				j++
			}
			w := expr[i:j]
			k := j
			for k < len(expr) && expr[k] == ' ' {
				k++
			}
			switch {
			case slices.Contains(promqlKeywords, strings.ToLower(w)):
				switch strings.ToLower(w) {
				case "by", "without", "on", "ignoring", "group_left", "group_right":
					labelList = true
				}
			case k < len(expr) && expr[k] == '(':
				// A function or an aggregation: sum, rate, absent, …
			case strings.EqualFold(w, "inf") || strings.EqualFold(w, "nan"):
			default:
				if !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isWordChar(expr[j]) || expr[j] == '.') {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func isWordStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isWordChar(c byte) bool { return isWordStart(c) || (c >= '0' && c <= '9') }

// skipString is the index after the string that starts at i.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

// skipTo is the index after the close that ends what opens at i, strings
// inside skipped.
func skipTo(s string, i int, close byte) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '"' || s[j] == '\'' || s[j] == '`':
			j = skipString(s, j) - 1
		case s[j] == close:
			return j + 1
		}
	}
	return len(s)
}
