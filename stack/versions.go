package stack

import "github.com/vllm-project/function-vllm-stack/upstream"

// programVersion is the version of the program a container runs, and where
// the function learnt it, for messages.
type programVersion struct {
	version upstream.Version
	from    string // e.g. "vllmConfig.image vllm/vllm-openai:v0.8.3"
}

func (p programVersion) String() string {
	return p.version.String() + " (" + p.from + ")"
}
