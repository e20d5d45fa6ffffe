package helm2stack

import (
	"cmp"
	"maps"
	"strings"
)

// Conversions of ServiceMonitors and OpenTelemetry.

// serviceMonitor: one setting makes the engines' and the router's.
func (c *converter) serviceMonitor(n node) error {
	if n.v == nil {
		return nil
	}
	var v struct {
		Enabled           bool              `json:"enabled"`
		AdditionalLabels  map[string]string `json:"additionalLabels"`
		Interval          string            `json:"interval"`
		ScrapeTimeout     string            `json:"scrapeTimeout"`
		HonorLabels       bool              `json:"honorLabels"`
		MetricRelabelings []any             `json:"metricRelabelings"`
		Relabelings       []any             `json:"relabelings"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	sm := c.monitor()
	if v.Interval != "" && v.Interval != "30s" {
		if sm.Interval != "" && sm.Interval != v.Interval {
			c.res.note(n.path+".interval", "one interval for the engines and the router: "+sm.Interval)
		} else {
			sm.Interval = v.Interval
		}
	}
	if len(v.AdditionalLabels) > 0 {
		mergeInto(&sm.Labels, v.AdditionalLabels)
	}
	const reason = "not supported: the ServiceMonitors take interval and labels only"
	if v.ScrapeTimeout != "" && v.ScrapeTimeout != "25s" {
		c.res.drop(n.path+".scrapeTimeout", reason)
	}
	if v.HonorLabels {
		c.res.drop(n.path+".honorLabels", reason)
	}
	if len(v.MetricRelabelings) > 0 {
		c.res.drop(n.path+".metricRelabelings", reason)
	}
	if len(v.Relabelings) > 0 {
		c.res.drop(n.path+".relabelings", reason)
	}
	other := "routerSpec.serviceMonitor.enabled"
	if strings.HasPrefix(n.path, "routerSpec") {
		other = "servingEngineSpec.serviceMonitor.enabled"
	}
	if b, _ := c.lookup(other).v.(bool); !b {
		c.res.note(n.path, "monitoring.serviceMonitor makes ServiceMonitors for both the engines and the router")
	}
	return nil
}

// grafanaDashboards: the chart's dashboards (its own JSON in ConfigMaps
// labelled for Grafana's sidecar) become the stack's dashboard, with the
// same labels and annotations; the chart's default labels are the stack's
// default. The dashboard's queries need the ServiceMonitors, which it turns
// on if the values do not.
func (c *converter) grafanaDashboards(n node) error {
	if n.v == nil {
		return nil
	}
	var v struct {
		Enabled     bool              `json:"enabled"`
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	m := ensure(&c.spec.Monitoring)
	d := ensure(&m.Dashboard)
	if len(v.Labels) > 0 && !maps.Equal(v.Labels, map[string]string{"grafana_dashboard": "1"}) {
		d.Labels = v.Labels
	}
	if len(v.Annotations) > 0 {
		d.Annotations = v.Annotations
	}
	note := "monitoring.dashboard: the stack's own dashboard, built from the metrics its releases export, in place of the chart's dashboards"
	if m.ServiceMonitor == nil {
		c.monitor()
		note += "; it needs monitoring.serviceMonitor, turned on"
	}
	c.res.note(n.path, note)
	return nil
}

func (c *converter) otel(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	name, _ := c.lookup("routerSpec.otel.serviceName").v.(string)
	r := c.router()
	r.ExtraArgs = append(r.ExtraArgs, "--otel-endpoint", s, "--otel-service-name", cmp.Or(name, "vllm-router"))
	if b, _ := c.lookup("routerSpec.otel.secure").v.(bool); b {
		r.ExtraArgs = append(r.ExtraArgs, "--otel-secure")
	}
	return nil
}
