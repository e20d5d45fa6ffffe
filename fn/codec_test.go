package fn

import (
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// rawCodec is a client codec that keeps the bytes of the last response.
type rawCodec struct{ last []byte }

func (c *rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (c *rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.last = data.Materialize()
	return proto.Unmarshal(c.last, v.(proto.Message))
}

func (c *rawCodec) Name() string { return "proto" }

// TestGRPCResponsesAreByteIdentical serves the function over gRPC on
// 127.0.0.1 and checks that the same request gets the same bytes back.
func TestGRPCResponsesAreByteIdentical(t *testing.T) {
	UseDeterministicCodec()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fnv1.RegisterFunctionRunnerServiceServer(srv, New(logging.NewNopLogger()))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	codec := &rawCodec{}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(codec)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := fnv1.NewFunctionRunnerServiceClient(conn)

	r := req(t, stacktest.LoadXR(t, "../example/stacks/multi-model.yaml", ""), compositionInput(), nil)
	var first []byte
	for i := range 10 {
		if _, err := client.RunFunction(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = codec.last
			continue
		}
		if string(codec.last) != string(first) {
			t.Fatalf("call %d returned different bytes than call 0", i)
		}
	}
	if len(first) < 1000 {
		t.Fatalf("response is suspiciously small: %d bytes", len(first))
	}

	// A serving stack's request, decoded by the server's codec (pruned):
	// the response of the request decoded whole.
	served := benchRequest(t, benchCases[1])
	if _, err := client.RunFunction(t.Context(), served); err != nil {
		t.Fatal(err)
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(run(t, benchRequest(t, benchCases[1])))
	if err != nil {
		t.Fatal(err)
	}
	if string(codec.last) != string(want) {
		t.Errorf("over gRPC a serving stack's request gets another response than in process")
	}
}
