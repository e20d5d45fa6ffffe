package fn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// responsesFile holds, for every request of identicalRequests, the SHA-256
// of the function's response in deterministic wire form.
const responsesFile = "testdata/responses.sha256"

// identicalRequests are the requests whose responses must not change by a
// byte when code moves (issue 20: the library split): every example, test
// and converted stack on the first reconcile and the next, with and without
// the Input, and the seed against each observed state of example/observed.
func identicalRequests(t *testing.T) map[string]*fnv1.RunFunctionRequest {
	t.Helper()
	var paths []string
	for _, glob := range []string{"../example/xr.yaml", "../example/stacks/*.yaml", "../test/render/testdata/*.yaml", "../test/render/testdata/invalid/*.yaml", "../cmd/helm2stack/testdata/scenarios/*.stack.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	reqs := map[string]*fnv1.RunFunctionRequest{}
	for _, p := range paths {
		name := strings.TrimPrefix(p, "../")
		for _, in := range []struct {
			name  string
			input map[string]any
		}{{"", nil}, {" +input", compositionInput()}} {
			reqs[name+in.name] = req(t, stacktest.LoadXR(t, p, ""), in.input, nil)
			reqs[name+in.name+" reconciled"] = reconciledRequest(t, stacktest.LoadXR(t, p, ""), in.input)
		}
	}
	for _, state := range []string{"downloading", "ready", "gpu-pending"} {
		reqs["example/observed/"+state], _ = observedExample(t, state)
	}
	return reqs
}

// TestIdenticalResponses: the function answers each request of
// identicalRequests with the bytes it answered when responsesFile was
// written (`go test ./fn -run TestIdenticalResponses -update`). A change of
// behaviour shows here with the requests it touches; the golden tests say
// what changed.
func TestIdenticalResponses(t *testing.T) {
	reqs := identicalRequests(t)
	var lines []string
	for name, r := range reqs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(run(t, r))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+name)
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(responsesFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(responsesFile)
	if err != nil {
		t.Fatalf("%v (run go test ./fn -run TestIdenticalResponses -update)", err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		want[l[66:]] = l[:64]
	}
	if len(want) != len(lines) {
		t.Errorf("%s has %d responses, the test makes %d requests", responsesFile, len(want), len(lines))
	}
	changed := 0
	for _, l := range lines {
		if want[l[66:]] != l[:64] {
			changed++
			t.Errorf("the response to %s changed", l[66:])
		}
	}
	if changed > 0 {
		t.Log(fmt.Sprintf("%d of %d responses changed; if that is intended, run go test ./fn -run TestIdenticalResponses -update", changed, len(lines)))
	}
}
