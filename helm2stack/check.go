package helm2stack

import (
	"encoding/json"
	"fmt"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack"
)

// functionWarning is the key of a note that is a warning of the function.
const functionWarning = "function warning"

// check builds the converted stack with the library the function runs, so a
// stack the function would refuse is an error of the conversion rather than
// a Fatal on the cluster, and what it would warn about is a note.
func (c *converter) check() error {
	b, err := json.Marshal(c.res.Stack.Spec)
	if err != nil {
		return fmt.Errorf("cannot encode the converted stack: %w", err)
	}
	var written any
	if err := json.Unmarshal(b, &written); err != nil {
		return fmt.Errorf("cannot read back the converted stack: %w", err)
	}
	spec, raw, err := stack.DecodeSpec(written)
	if err != nil {
		return fmt.Errorf("the function cannot read the converted stack: %w", err)
	}
	// The Input's adapter sync image is the Composition's business: a note
	// of each runtime adapter says so.
	in := &v1beta1.Input{AdapterSync: &v1beta1.AdapterSyncInput{Image: "the-function-image"}}
	found := stack.New(stack.Identity{Name: c.opts.Name, Namespace: c.opts.Namespace}, spec, in).Validate(raw)
	if err := found.Err(); err != nil {
		return fmt.Errorf("the function would refuse the converted stack: %w", err)
	}
	for _, w := range found.Warnings {
		c.res.note(functionWarning, w)
	}
	return nil
}
