package wire

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Fuzz target of the decoder inside the package; encode_test.go fuzzes the
// encoder. `go test ./internal/wire` runs their seeds; hack/fuzz.sh fuzzes
// each for a bounded time.

// FuzzComposedDecoder: the decoder EncodeViaJSON uses on the JSON that
// encoding/json writes gives the same value encoding/json reads, for any
// JSON value.
func FuzzComposedDecoder(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":[1,-2.5e10,true,null,{}]}`, `"\u003c\u2028\\\"x"`, `{"emptyDir":{},"x":{"y":null}}`, `[[],[{}]]`, `1e308`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		m, err := json.Marshal(v)
		if err != nil {
			return
		}
		want, err := structpb.NewValue(v)
		if err != nil {
			return // not valid UTF-8: encoding/json replaced it; no Struct holds it
		}
		d := decoder{data: string(m)}
		got, err := d.value(false)
		if err != nil || d.pos != len(m) {
			t.Fatalf("decoding %s: %v (at %d of %d)", m, err, d.pos, len(m))
		}
		if !proto.Equal(got, want) {
			t.Errorf("decoding %s: got %v, want %v", m, got, want)
		}
	})
}
