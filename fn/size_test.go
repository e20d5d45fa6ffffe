package fn

import "testing"

// maxResponseBytes bounds the response of a 32-model stack. Crossplane
// accepts at most 4 MiB; a response well under it leaves room for the rest
// of a pipeline and for bigger stacks (up to 64 models).
const maxResponseBytes = 512 << 10

// TestResponseSize: the response for 32 models, on the first call and once
// the stack serves, stays under maxResponseBytes.
func TestResponseSize(t *testing.T) {
	for _, c := range benchCases {
		if c.models != 32 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			size := wireSize(t, benchRun(t, benchRequest(t, c)))
			t.Logf("%s: response %d bytes", c.name, size)
			if size > maxResponseBytes {
				t.Errorf("response is %d bytes, want at most %d", size, maxResponseBytes)
			}
		})
	}
}
