package fn

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
)

// deterministicCodec is gRPC's proto codec with deterministic marshalling.
// A response holds maps (desired resources, every object's fields as
// structpb); protobuf writes map entries in Go's random iteration order
// unless told otherwise, so the same response would differ byte for byte
// from call to call.
type deterministicCodec struct {
	encoding.CodecV2 // gRPC's own proto codec, for unmarshalling
}

// UseDeterministicCodec makes this process's gRPC servers and clients
// marshal protobuf messages deterministically. Call it before serving.
func UseDeterministicCodec() {
	encoding.RegisterCodecV2(deterministicCodec{CodecV2: encoding.GetCodecV2(grpcproto.Name)})
}

func (deterministicCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("cannot marshal %T: not a protobuf message", v)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (deterministicCodec) Name() string { return grpcproto.Name }

// Unmarshal decodes a RunFunctionRequest without the fields of observed and
// required objects the function does not read (see wire.PruneRequest); any other
// message, and a request that is not well-formed, as gRPC's codec does.
func (c deterministicCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*fnv1.RunFunctionRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return unmarshalRequest(buf.ReadOnlyData(), req)
}

// unmarshalRequest decodes the wire form of a request as the function reads
// it.
func unmarshalRequest(b []byte, req *fnv1.RunFunctionRequest) error {
	if pruned, err := wire.PruneRequest(b); err == nil {
		b = pruned
	}
	return proto.Unmarshal(b, req)
}
