package helm2stack

import (
	"cmp"
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
