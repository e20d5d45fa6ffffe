package chartkeys

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The "Coming from the Helm chart" table of docs/helm.md: one row per chart key or
// group of keys, its first cell the keys in the table's notation, its
// second the ProductionStack field they become or why they do not.

// Heading is the heading of docs/helm.md, above the table.
const Heading = "# Coming from the Helm chart"

// Row is one row of the table.
type Row struct {
	Cell  string // the keys, e.g. `modelSpec[].requestCPU`, `requestGPUType`
	Field string // the field, or the reason the stack does not take the keys
}

// ReadREADME returns the rows of the table in the page at path (docs/helm.md). A row
// must have two cells (no " | " inside a cell).
func ReadREADME(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []Row
	in, header := false, 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		switch {
		case line == Heading:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "#"):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			continue
		}
		if header < 2 { // the header and the separator
			header++
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cells) != 2 {
			return nil, fmt.Errorf("Helm table row has %d cells, want 2 (no ' | ' inside a cell): %s", len(cells), line)
		}
		rows = append(rows, Row{Cell: cells[0], Field: cells[1]})
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if header < 2 {
		return nil, fmt.Errorf("no table under %q in %s", Heading, path)
	}
	return rows, nil
}

// Roots are the top-level keys of keys (servingEngineSpec, routerSpec, ...),
// which CellKeys takes as absolute.
func Roots(keys []string) []string {
	var roots []string
	for _, k := range keys {
		if r := Root(k); !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// CellKeys expands the first cell of a Helm table row (Row.Cell) into full key
// patterns. Each comma-separated item is a key in backticks:
//   - `modelSpec[].x` abbreviates `servingEngineSpec.modelSpec[].x`;
//   - a key starting with one of roots (the chart's top-level keys) is
//     absolute, any other is relative to the parent of the last absolute
//     one: `routerSpec.extraArgs`, `otel.*` is routerSpec.otel.*;
//   - `p.{a, b.c}` is p.a and p.b.c, and its parent is p;
//   - a trailing `*` is a wildcard (see Matches), and `p.*` has the parent
//     of p.
func CellKeys(cell string, roots []string) ([]string, error) {
	var out []string
	parent := ""
	for _, item := range splitTopLevel(cell) {
		if len(item) < 3 || item[0] != '`' || item[len(item)-1] != '`' || strings.Count(item, "`") != 2 {
			return nil, fmt.Errorf("item %q is not one key in backticks", item)
		}
		key := item[1 : len(item)-1]
		if strings.HasPrefix(key, "modelSpec[]") {
			key = "servingEngineSpec." + key
		}
		if slices.Contains(roots, Root(key)) {
			parent = parentOf(key)
		} else {
			key = parent + key
		}
		expanded, err := expandGroup(key)
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", item, err)
		}
		out = append(out, expanded...)
	}
	return out, nil
}

// splitTopLevel splits s at ", " outside braces.
func splitTopLevel(s string) []string {
	var items []string
	depth, start := 0, 0
	for i := range len(s) {
		switch {
		case s[i] == '{':
			depth++
		case s[i] == '}':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], ", "):
			items = append(items, s[start:i])
			start = i + 2
		}
	}
	return append(items, s[start:])
}

// Root is a key's first segment: servingEngineSpec, loraAdapters, ...
func Root(key string) string {
	end := strings.IndexAny(key, ".[")
	if end < 0 {
		return key
	}
	return key[:end]
}

// parentOf is the prefix relative keys after key are completed with: up to
// the last dot before a group, else before the last segment of key without a
// trailing ".*".
func parentOf(key string) string {
	if i := strings.Index(key, "{"); i >= 0 {
		return key[:i]
	}
	key = strings.TrimSuffix(key, ".*")
	return key[:strings.LastIndex(key, ".")+1]
}

// expandGroup expands one "{a, b}" group, the only one allowed in a key.
func expandGroup(key string) ([]string, error) {
	open, end := strings.Index(key, "{"), strings.Index(key, "}")
	if open < 0 && end < 0 {
		return []string{key}, nil
	}
	if open < 0 || end != len(key)-1 || strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
		return nil, fmt.Errorf("want at most one {a, b} group, at the end")
	}
	var out []string
	for _, member := range strings.Split(key[open+1:end], ", ") {
		if member == "" || strings.ContainsAny(member, " ,") {
			return nil, fmt.Errorf("group member %q: separate members with a comma and one space", member)
		}
		out = append(out, key[:open]+member)
	}
	return out, nil
}

// Matches: a pattern "p.*" matches p and every key under it, "p*" every
// key starting with p, any other pattern only itself.
func Matches(pattern, key string) bool {
	if base, ok := strings.CutSuffix(pattern, ".*"); ok {
		return key == base || strings.HasPrefix(key, base+".")
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return pattern == key
}
