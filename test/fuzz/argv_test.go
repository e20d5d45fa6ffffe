package fuzz_test

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/argvcheck"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// argvTables are the option tables of vLLM and the router (fn's contract
// test data), loaded once.
var argvTables = sync.OnceValues(func() ([2]argvcheck.Table, error) {
	var ts [2]argvcheck.Table
	var err error
	if ts[0], err = argvcheck.LoadTable("../../stack/testdata/upstream/vllm-flags.tsv"); err != nil {
		return ts, err
	}
	ts[1], err = argvcheck.LoadTable("../../stack/testdata/upstream/router-flags.tsv")
	return ts, err
})

// checkArgv is the argument-injection invariant (issue 18): in a composed
// stack, every value of the spec lands in exactly the option or positional
// of vLLM's or the router's command line it was meant for
// (internal/argvcheck).
func checkArgv(t *testing.T, xr map[string]any, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	ts, err := argvTables()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(xr["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var spec v1alpha1.ProductionStackSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return // the function composed it, so it decodes strictly; a loose decode may still differ
	}
	res := rsp.GetDesired().GetResources()
	objects := make([]map[string]any, 0, len(res))
	for _, k := range slices.Sorted(maps.Keys(res)) {
		objects = append(objects, res[k].GetResource().AsMap())
	}
	for _, p := range argvcheck.CheckObjects(&spec, objects, ts[0], ts[1]) {
		t.Errorf("argument injection: %s", p)
	}
}
