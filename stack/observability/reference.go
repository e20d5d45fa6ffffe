package observability

import (
	"fmt"
	"strings"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// programNames are the programs as the reference names them.
var programNames = map[string]string{VLLM: "vLLM", Router: "router", GAIE: "GAIE picker", LLMD: "llm-d picker"}

// newest is the newest release of each program the function knows.
func newest(program string) upstream.Version {
	switch program {
	case VLLM:
		return upstream.VLLMNewest
	case Router:
		return upstream.RouterNewest
	}
	return upstream.PickerNewest[program]
}

// releases says which releases a variant is for: from its Since up to the
// next variant's, or to the newest release known.
func releases(program string, vs []Variant, i int) string {
	if i+1 < len(vs) {
		return fmt.Sprintf("%s %s up to before %s", programNames[program], vs[i].Since, vs[i+1].Since)
	}
	return fmt.Sprintf("%s %s to %s", programNames[program], vs[i].Since, newest(program))
}

// referenceSelector stands for the Services a query selects; a
// per-Service alert's selects one.
const (
	referenceSelector        = `{namespace="<ns>",service=~"<services>"}`
	referenceServiceSelector = `{namespace="<ns>",service="<service>"}`
)

// rows are the reference's lines of one panel or alert: one per variant
// of each of its programs.
func rows(programs []string, variants map[string][]Variant, sel, threshold string, line func(query, metric, releases string) string) []string {
	var out []string
	for _, prog := range programs {
		vs := variants[prog]
		for i, v := range vs {
			if v.Metric == "" {
				out = append(out, line("none", "none", releases(prog, vs, i)))
				continue
			}
			var qs []string
			for _, q := range v.Queries {
				e := expand(q.Expr, v.Metric, sel, threshold)
				qs = append(qs, "`"+e+"`")
			}
			out = append(out, line(strings.Join(qs, "<br>"), "`"+v.Metric+"`", releases(prog, vs, i)))
		}
	}
	return out
}

// Reference is the Markdown reference of every panel and alert: the query
// it runs and the releases whose metric it names (docs/operations.md
// holds it between markers; a test keeps it current).
func Reference() string {
	var b strings.Builder
	b.WriteString("#### Dashboard panels\n\n")
	b.WriteString("| Row | Panel | Query | Metric | Releases |\n|---|---|---|---|---|\n")
	for _, p := range Panels {
		for _, l := range rows(p.Programs, p.Variants, referenceSelector, "", func(q, m, r string) string {
			return fmt.Sprintf("| %s | %s | %s | %s | %s |", p.Row, p.Title, q, m, r)
		}) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n#### Alerts\n\n")
	b.WriteString("| Alert | Severity | Expression | Metric | Releases |\n|---|---|---|---|---|\n")
	for _, a := range Alerts {
		th := "<T>"
		if a.Threshold != "" {
			th = "<" + a.Threshold + ">"
		}
		sel := referenceSelector
		if a.PerService {
			sel = referenceServiceSelector
		}
		for _, l := range rows(a.Programs, a.Variants, sel, th, func(q, m, r string) string {
			return fmt.Sprintf("| %s | %s | %s | %s | %s |", a.Name, a.Severity, q, m, r)
		}) {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n")
	for _, a := range Alerts {
		fmt.Fprintf(&b, "- **%s**: %s\n", a.Name, a.Summary)
	}
	return b.String()
}
