package stack

import (
	"math"
	"net/url"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
)

// kedaNumber is the JSON number grammar: KEDA v2.20.2 reads the Prometheus
// trigger's threshold into a float64 with json.Unmarshal of the trimmed
// value (pkg/scalers/scalersconfig/typed_config.go:490 and :517,
// prometheus_scaler.go:52), so "5Gi", "5m", "+5", ".5" and "5." fail the
// ScaledObject while a Kubernetes quantity parser would take them.
var kedaNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// validateKEDAThreshold checks a Prometheus trigger's threshold as KEDA
// parses it: a positive plain number.
func validateKEDAThreshold(f *Findings, field, v string) {
	if v == "" {
		return
	}
	x, err := strconv.ParseFloat(v, 64)
	if !kedaNumber.MatchString(v) || err != nil || !(x > 0) || math.IsInf(x, 0) {
		f.errorf("%s %s is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as \"5\" or \"2.5\"", field, clipQuote(v))
	}
}

// prometheusURL is the XRD's pattern of prometheusAddress.
var prometheusURL = regexp.MustCompile(`^https?://[^/?#]+(/[^?#]*)?$`)

// validatePrometheusAddress checks a Prometheus trigger's serverAddress:
// KEDA v2.20.2 appends "/api/v1/query?query=…" to it and sends the request
// with net/http (prometheus_scaler.go:207 and :220), so it must be an http
// or https URL with a host, and no query or fragment of its own.
func validatePrometheusAddress(f *Findings, field, v string) {
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	ok := prometheusURL.MatchString(v) && err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != "" &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && u.Opaque == ""
	if ok && u.Port() != "" {
		if n, err := strconv.Atoi(u.Port()); err != nil || len(validation.IsValidPortNum(n)) > 0 {
			ok = false
		}
	}
	if !ok {
		f.errorf("%s %s is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090", field, clipQuote(v))
	}
}
