package fn

import (
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack"
)

// decodeInput decodes the function's Input; a step without one gets the
// defaults.
func decodeInput(s *structpb.Struct) (*v1beta1.Input, error) {
	if s == nil {
		return &v1beta1.Input{}, nil
	}
	return stack.DecodeInput(s.AsMap())
}
