package kubediff

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// findings are inputs this oracle found the function accepting while the
// API server refused an object it composed; the function now refuses each
// with a Fatal naming the field (fn's unit tests hold the exact messages).
var findings = []struct {
	name          string
	path, value   string
	path2, value2 string
	fatal         string // a part of the Fatal message
}{
	{name: "IngressHostIP", path: "spec.routerConfig.ingress", value: `{"host": "1.2.3.4"}`,
		fatal: `spec.routerConfig.ingress.host "1.2.3.4" is an IP address`},
	{name: "IngressClassAnnotationDiffers", path: "spec.routerConfig.ingress", value: `{"className": "nginx", "annotations": {"kubernetes.io/ingress.class": "traefik"}}`,
		fatal: `spec.routerConfig.ingress.annotations[kubernetes.io/ingress.class] "traefik" must match spec.routerConfig.ingress.className "nginx"`},
	{name: "NetworkPolicyCIDRHostBits", path: "spec.networkPolicy", value: `{"allowFrom": [{"ipBlock": {"cidr": "10.0.0.1/8"}}]}`,
		fatal: `spec.networkPolicy.allowFrom[0].ipBlock.cidr "10.0.0.1/8" has bits set beyond its prefix length`},
	{name: "NetworkPolicyCIDRMapped", path: "spec.networkPolicy", value: `{"allowFrom": [{"ipBlock": {"cidr": "::ffff:10.0.0.0/104"}}]}`,
		fatal: `spec.networkPolicy.allowFrom[0].ipBlock.cidr "::ffff:10.0.0.0/104" is an IPv4-mapped IPv6 network`},
	{name: "NetworkPolicyExceptHostBits", path: "spec.networkPolicy", value: `{"allowFrom": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.1/16"]}}]}`,
		fatal: `spec.networkPolicy.allowFrom[0].ipBlock.except[0] "10.0.0.1/16" has bits set beyond its prefix length`},
	{name: "HTTPRouteWildcardHostnameTooLong", path: "spec.routerConfig.httpRoute",
		value: `{"parentRefs": [{"name": "gw"}], "hostnames": ["*.` + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("a", 61) + `"]}`,
		fatal: `spec.routerConfig.httpRoute.hostnames[0] "*.aaa`},
	{name: "HTTPRouteSameGatewayTwice", path: "spec.routerConfig.httpRoute", value: `{"parentRefs": [{"name": "gw"}, {"name": "gw"}]}`,
		fatal: `spec.routerConfig.httpRoute.parentRefs[1] refers to Gateway "gw" as parentRefs[0] does`},
	{name: "PVCReadWriteOncePodWithOthers", path: "spec.storage", value: `{"enabled": true, "size": "100Gi", "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}`,
		fatal: `spec.storage.accessModes [ReadWriteOncePod ReadWriteOnce] is invalid`},
}

// TestFindings: the example stack with each finding's values is refused by
// the function, not composed into an object the API server refuses.
func TestFindings(t *testing.T) {
	c := mustCorpus(t)
	for _, f := range findings {
		t.Run(f.name, func(t *testing.T) {
			xr := findingStack(t, c, f.path, f.value, f.path2, f.value2)
			problems, fatal := refusals(t, xr, nil)
			for _, p := range problems {
				t.Errorf("the API server refuses %s", p)
			}
			if !strings.Contains(fatal, f.fatal) {
				t.Errorf("the function's Fatal is %q, want it to contain %q", fatal, f.fatal)
			}
		})
	}
}

func findingStack(t *testing.T, c *corpus, path, value, path2, value2 string) map[string]any {
	var xr map[string]any
	if err := json.Unmarshal(c.stacks[0].json, &xr); err != nil {
		t.Fatal(err)
	}
	for _, pv := range [][2]string{{path, value}, {path2, value2}} {
		if pv[0] != "" {
			setPath(xr, pv[0], parse(pv[1]))
		}
	}
	return xr
}

// TestProbe renders the example stack with KUBEDIFF_PROBE's values
// (path=value, then optionally a second on the next line) and logs what the
// function and the API server say: for exploring, skipped without it.
func TestProbe(t *testing.T) {
	probe := os.Getenv("KUBEDIFF_PROBE")
	if probe == "" {
		t.Skip("KUBEDIFF_PROBE is not set")
	}
	var pv []string
	for _, l := range strings.Split(probe, "\n") {
		p, v, _ := strings.Cut(l, "=")
		pv = append(pv, p, v)
	}
	for len(pv) < 4 {
		pv = append(pv, "")
	}
	xr := findingStack(t, mustCorpus(t), pv[0], pv[1], pv[2], pv[3])
	problems, fatal := refusals(t, xr, nil)
	t.Logf("function: %q", fatal)
	for _, p := range problems {
		t.Logf("API server: %s", p)
	}
}
