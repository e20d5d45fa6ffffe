package stack

import (
	"fmt"
	"math"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/stack/build"
)

// gatewayDurationPattern is Gateway API's Duration (HTTPRouteTimeouts'
// request), as its CRD v1.6.3 writes it (e2e/crds pins it).
var gatewayDurationPattern = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// TestGatewayDuration: a route's timeout is whole minutes up to 99999, whole
// hours beyond, and 99999h at most: every value matches Gateway API's
// duration pattern and is not shorter than asked, up to the cap.
func TestGatewayDuration(t *testing.T) {
	for _, tc := range []struct {
		seconds int64
		want    string
	}{
		{600, "10m"}, {601, "11m"}, {99999 * 60, "99999m"}, {99999*60 + 1, "1667h"},
		{99999 * 3600, "99999h"}, {99999*3600 + 1, "99999h"},
		{int64(math.MaxInt32)*int64(math.MaxInt32) + math.MaxInt32, "99999h"},
	} {
		got := build.GatewayDuration(tc.seconds)
		if got != tc.want {
			t.Errorf("gatewayDuration(%d) = %s, want %s", tc.seconds, got, tc.want)
		}
		if !gatewayDurationPattern.MatchString(got) {
			t.Errorf("gatewayDuration(%d) = %s: Gateway API's CRD refuses it", tc.seconds, got)
		}
	}
}

// TestRouteTimeoutAtBounds: the longest start-up budget and cold start the
// XRD takes still give a timeout the HTTPRoute CRD accepts (it was 100000m
// and more).
func TestRouteTimeoutAtBounds(t *testing.T) {
	for name, xr := range map[string]map[string]any{
		"longest start-up budget": gieXR("probes.startup", map[string]any{"initialDelaySeconds": 47, "periodSeconds": 2147483, "failureThreshold": 1000}),
		"longest cold start":      gieXR("scaleToZero", zeroBlock("coldStartSeconds", int64(math.MaxInt32))),
		"100000 minutes":          gieXR("probes.startup", map[string]any{"periodSeconds": 6000, "failureThreshold": 1000}),
	} {
		t.Run(name, func(t *testing.T) {
			for _, r := range routeRules(t, mustRun(t, req(t, xr, nil, nil)), "engine-m-httproute") {
				var prefix, pool, timeout string
				fmt.Sscan(r, &prefix, &pool, &timeout)
				if !gatewayDurationPattern.MatchString(timeout) {
					t.Errorf("rule %s: timeout %s does not match Gateway API's duration", prefix, timeout)
				}
			}
		})
	}
}

// TestRoutesOfManyModels: as many models as the XRD takes (64) give one
// HTTPRoute each, of at most two rules (Gateway API takes 16 a route), named
// and keyed apart.
func TestRoutesOfManyModels(t *testing.T) {
	var models []any
	for i := range 64 {
		models = append(models, map[string]any{"name": fmt.Sprintf("model-%02d", i), "modelURL": "org/m"})
	}
	xr := gieXR("model", nil, "models", models)
	rsp := mustRun(t, req(t, xr, nil, nil))
	names := map[string]bool{}
	routes := 0
	for _, k := range rsp.keys {
		u, ok := rsp.objects[k].(*unstructured.Unstructured)
		if !ok || u.GetKind() != "HTTPRoute" {
			continue
		}
		routes++
		names[u.GetName()] = true
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		want := 1
		if k == "engine-model-00-httproute" {
			want = 2 // the first model holds the gateway's root
		}
		if len(rules) != want {
			t.Errorf("%s: %d rules, want %d", k, len(rules), want)
		}
	}
	if routes != 64 || len(names) != 64 {
		t.Errorf("%d HTTPRoutes, %d names: want 64 of each", routes, len(names))
	}
	if diff := cmp.Diff([]string{"/model-63 s-model-63-pool 10m"}, routeRules(t, rsp, "engine-model-63-httproute")); diff != "" {
		t.Errorf("the last model's route (-want +got):\n%s", diff)
	}
}
