package v1alpha1

// Nil-safe getters of the optional blocks' enabled switches.

// GetEnabled returns the switch, or nil for a nil block.
func (in *Ingress) GetEnabled() *bool {
	if in == nil {
		return nil
	}
	return in.Enabled
}

// GetEnabled returns the switch, or nil for a nil block.
func (r *HTTPRoute) GetEnabled() *bool {
	if r == nil {
		return nil
	}
	return r.Enabled
}

// GetEnabled returns the switch, or nil for a nil block.
func (m *ServiceMonitor) GetEnabled() *bool {
	if m == nil {
		return nil
	}
	return m.Enabled
}

// GetEnabled returns the switch, or nil for a nil block.
func (d *Dashboard) GetEnabled() *bool {
	if d == nil {
		return nil
	}
	return d.Enabled
}

// GetEnabled returns the switch, or nil for a nil block.
func (a *Alerts) GetEnabled() *bool {
	if a == nil {
		return nil
	}
	return a.Enabled
}

// GetEnabled returns the switch, or nil for a nil block.
func (n *NetworkPolicy) GetEnabled() *bool {
	if n == nil {
		return nil
	}
	return n.Enabled
}
