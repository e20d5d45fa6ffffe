package helm2stack

// Keys the stack drops with a reason.

// dropEnabled reports a block of the chart the stack does not include when
// its switch is on.
func dropEnabled(key, reason string) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil {
			return nil
		}
		f, err := n.fields()
		if err != nil {
			return err
		}
		if b, _ := f[key].v.(bool); b {
			c.res.drop(n.path, reason)
		}
		return nil
	}
}
