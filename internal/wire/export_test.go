package wire

import "google.golang.org/protobuf/types/known/structpb"

// DecodeObject opens the JSON decoder to the package's external tests: it
// decodes the object data, pruned, as EncodeViaJSON does.
func DecodeObject(data string) (*structpb.Struct, error) {
	d := decoder{data: data}
	return d.object(true)
}
