package observability

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultDashboardLabels are the labels of the dashboard's ConfigMap unless
// the stack names others: the label the Grafana Helm chart's dashboard
// sidecar selects by default (sidecar.dashboards.label grafana_dashboard,
// with labelValue "" taking any value), with the value kube-prometheus-stack
// gives its own dashboards and its users often set as labelValue ("1"); the
// production-stack chart's grafanaDashboards.labels default too.
var DefaultDashboardLabels = map[string]string{"grafana_dashboard": "1"}

// The Grafana JSON model, the parts the dashboard uses. Structs, not maps:
// encoding/json writes their fields in a fixed order, so the same stack
// always makes the same bytes.
type dashboard struct {
	Annotations   list       `json:"annotations"`
	Editable      bool       `json:"editable"`
	GraphTooltip  int        `json:"graphTooltip"`
	Panels        []panel    `json:"panels"`
	Refresh       string     `json:"refresh"`
	SchemaVersion int        `json:"schemaVersion"`
	Tags          []string   `json:"tags"`
	Templating    templating `json:"templating"`
	Time          timeRange  `json:"time"`
	Timezone      string     `json:"timezone"`
	Title         string     `json:"title"`
	UID           string     `json:"uid"`
	Version       int        `json:"version"`
}

type list struct {
	List []any `json:"list"`
}

type templating struct {
	List []variable `json:"list"`
}

type variable struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Type  string `json:"type"`
	Query string `json:"query"`
}

type timeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type gridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int          `json:"id"`
	Type        string       `json:"type"`
	Title       string       `json:"title"`
	Description string       `json:"description,omitempty"`
	GridPos     gridPos      `json:"gridPos"`
	Collapsed   *bool        `json:"collapsed,omitempty"`
	Datasource  *datasource  `json:"datasource,omitempty"`
	FieldConfig *fieldConfig `json:"fieldConfig,omitempty"`
	Targets     []target     `json:"targets,omitempty"`
	Panels      []panel      `json:"panels,omitempty"`
}

type fieldConfig struct {
	Defaults  fieldDefaults `json:"defaults"`
	Overrides []any         `json:"overrides"`
}

type fieldDefaults struct {
	Unit string   `json:"unit"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"`
}

type target struct {
	RefID        string      `json:"refId"`
	Datasource   *datasource `json:"datasource"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
}

// The dashboard's data source: a variable of type prometheus, so that it
// works in any Grafana, whatever its Prometheus data source is named.
var promDS = &datasource{Type: "prometheus", UID: "${datasource}"}

// A DashboardPanel is one panel as the dashboard shows it, for tests and
// the reference.
type DashboardPanel struct {
	Row, Title string
	Queries    []Rendered
}

// DashboardPanels are the panels of t's dashboard, in order: the panels of
// Panels whose metric the releases t runs export, each with one query per
// metric name among them.
func DashboardPanels(t Target) []DashboardPanel {
	var out []DashboardPanel
	for _, p := range Panels {
		qs := render(t.Namespace, p.Variants, withFeature(t.sources(p.Programs), p.Feature), "")
		if len(qs) > 0 {
			out = append(out, DashboardPanel{Row: p.Row, Title: p.Title, Queries: qs})
		}
	}
	return out
}

// DashboardJSON is t's Grafana dashboard.
func DashboardJSON(t Target) []byte {
	d := dashboard{
		Annotations:   list{List: []any{}},
		Editable:      true,
		GraphTooltip:  1,
		Refresh:       "30s",
		SchemaVersion: 39,
		Tags:          []string{"vllm", "vllm-stack"},
		Templating:    templating{List: []variable{{Name: "datasource", Label: "Data source", Type: "datasource", Query: "prometheus"}}},
		Time:          timeRange{From: "now-1h", To: "now"},
		Title:         "vLLM stack " + t.Namespace + "/" + t.Name,
		UID:           DashboardUID(t.Namespace, t.Name),
		Version:       1,
	}
	byTitle := map[string]Panel{}
	for _, p := range Panels {
		byTitle[p.Title] = p
	}
	id, y, x := 0, 0, 0
	row := ""
	for _, dp := range DashboardPanels(t) {
		if dp.Row != row {
			if x != 0 {
				y += 8
				x = 0
			}
			id++
			collapsed := false
			d.Panels = append(d.Panels, panel{ID: id, Type: "row", Title: dp.Row, GridPos: gridPos{H: 1, W: 24, Y: y}, Collapsed: &collapsed})
			y++
			row = dp.Row
		}
		p := byTitle[dp.Title]
		fc := &fieldConfig{Defaults: fieldDefaults{Unit: p.Unit}, Overrides: []any{}}
		if p.Unit == "percentunit" {
			lo, hi := 0.0, 1.0
			fc.Defaults.Min, fc.Defaults.Max = &lo, &hi
		}
		id++
		out := panel{ID: id, Type: "timeseries", Title: p.Title, Description: p.Description, GridPos: gridPos{H: 8, W: 12, X: x, Y: y}, Datasource: promDS, FieldConfig: fc}
		for i, q := range dp.Queries {
			out.Targets = append(out.Targets, target{RefID: refID(i), Datasource: promDS, Expr: q.Expr, LegendFormat: q.Legend})
		}
		d.Panels = append(d.Panels, out)
		if x == 0 {
			x = 12
		} else {
			x, y = 0, y+8
		}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		// Only strings, numbers and structs of them: cannot fail.
		panic(err)
	}
	return append(b, '\n')
}

// refID is Grafana's name of a panel's i-th query: A, B, … Z, AA, AB, …
func refID(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return refID(i/26-1) + refID(i%26)
}

// DashboardUID is the dashboard's uid: stable for the stack, unique per
// namespace and name, within Grafana's 40 characters.
func DashboardUID(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return "vllm-stack-" + hex.EncodeToString(sum[:])[:24]
}

// DashboardKey is the ConfigMap key, the file name the sidecar writes:
// namespace and stack, so that the dashboards of two stacks of one name in
// two namespaces do not overwrite each other in Grafana's one folder.
func DashboardKey(namespace, name string) string {
	return "vllm-stack-" + namespace + "-" + name + ".json"
}

// A ConfigMapMeta is the metadata of the dashboard's ConfigMap.
type ConfigMapMeta struct {
	Name, Namespace string
	// Labels are the stack's labels of the object and the labels the
	// sidecar selects by (DefaultDashboardLabels unless the stack names
	// others); Annotations e.g. the sidecar's folder annotation.
	Labels, Annotations map[string]string
}

// DashboardConfigMap is t's dashboard in a ConfigMap the Grafana sidecar
// loads.
func DashboardConfigMap(t Target, m ConfigMapMeta) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations},
		Data:       map[string]string{DashboardKey(t.Namespace, t.Name): string(DashboardJSON(t))},
	}
}
