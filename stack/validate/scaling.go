package validate

import (
	"math"
	"net/url"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateAutoscaling checks an autoscaling block as written at path.
func validateAutoscaling(f *Findings, path string, a *v1alpha1.Autoscaling) {
	if a == nil {
		return
	}
	if a.Enabled != nil && !*a.Enabled {
		// The XRD's rule holds for a disabled autoscaler too.
		orderedBounds(f, path, a.MinReplicas, a.MaxReplicas)
		return
	}
	validateScaleBounds(f, path, a.MinReplicas, a.MaxReplicas)
	if a.IdleReplicas != nil && *a.IdleReplicas >= ptr.Deref(a.MinReplicas, 1) {
		f.errorf("%s.idleReplicas %d must be below minReplicas %d: KEDA scales to idleReplicas only when there is no traffic", path, *a.IdleReplicas, ptr.Deref(a.MinReplicas, 1))
	}
	if resolve.AutoscalerType(a) == resolve.AutoscalerKEDA {
		if a.PrometheusAddress == "" {
			f.errorf("%s.prometheusAddress is required with type keda: KEDA reads vllm:num_requests_waiting from the Prometheus that scrapes the engines", path)
		}
		validateKEDAThreshold(f, path+".threshold", a.Threshold)
		validatePrometheusAddress(f, path+".prometheusAddress", a.PrometheusAddress)
	}
	validateTriggers(f, path, a)
}

func validateRouterAutoscaling(f *Findings, path string, a *v1alpha1.RouterAutoscaling) {
	if a == nil {
		return
	}
	if a.Enabled != nil && !*a.Enabled {
		orderedBounds(f, path, a.MinReplicas, a.MaxReplicas)
		return
	}
	validateScaleBounds(f, path, a.MinReplicas, a.MaxReplicas)
}

func validateScaleBounds(f *Findings, path string, minReplicas, maxReplicas *int32) {
	atLeast(f, path+".minReplicas", minReplicas, 1)
	switch {
	case maxReplicas == nil:
		f.errorf("%s.maxReplicas is required: set the most replicas the autoscaler may run", path)
	case *maxReplicas < ptr.Deref(minReplicas, 1):
		f.errorf("%s: minReplicas %d exceeds maxReplicas %d", path, ptr.Deref(minReplicas, 1), *maxReplicas)
	}
}

// orderedBounds is the XRD's rule on minReplicas and maxReplicas when both
// are set, which holds whether or not the autoscaler is enabled.
func orderedBounds(f *Findings, path string, minReplicas, maxReplicas *int32) {
	if minReplicas != nil && maxReplicas != nil && *minReplicas > *maxReplicas {
		f.errorf("%s: minReplicas %d exceeds maxReplicas %d", path, *minReplicas, *maxReplicas)
	}
}

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
		f.errorf("%s %s is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as \"5\" or \"2.5\"", field, resolve.ClipQuote(v))
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
		f.errorf("%s %s is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090", field, resolve.ClipQuote(v))
	}
}

const (
	// routerIncomingAt is the first router that counts
	// vllm:num_incoming_requests, also for a model with no ready engine
	// (BEYOND.md §4, §9).
	routerIncomingMinor = 8
)

// routerIncomingAt is the first router release with
// vllm:num_incoming_requests_total.
var routerIncomingAt = upstream.V(0, 1, routerIncomingMinor)

// validateScaleToZero checks each model's scaleToZero against its engine
// and the routing layer.
func validateScaleToZero(f *Findings, s *resolve.Stack) {
	warned := false
	for _, e := range s.Engines {
		z := e.Cfg.ScaleToZero
		if z == nil {
			continue
		}
		p := e.Block + ".scaleToZero"
		if !ptr.Deref(z.Enabled, true) {
			continue
		}
		if e.Role != "" {
			f.errorf("%s", disaggregatedZeroRefusal(s, p))
			continue
		}
		if ok := e.MultiNode; ok {
			f.errorf("%s: a multi-node model is a LeaderWorkerSet, whose groups the stack does not scale to zero yet: remove scaleToZero or multiNode", p)
			continue
		}
		if a := e.Cfg.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
			f.errorf("%s and %s.autoscaling both scale the model: scaleToZero composes its own KEDA ScaledObject (maxReplicas, threshold, prometheusAddress); remove autoscaling", p, e.Block)
		}
		if z.MaxReplicas == nil {
			f.errorf("%s.maxReplicas is required: set the most replicas the model may scale out to", p)
		}
		if z.PrometheusAddress == "" {
			f.errorf("%s.prometheusAddress is required: KEDA reads the model's demand from the Prometheus that scrapes the engines (and the endpoint pickers or the router)", p)
		}
		validateKEDAThreshold(f, p+".threshold", z.Threshold)
		validatePrometheusAddress(f, p+".prometheusAddress", z.PrometheusAddress)
		budget := build.StartupBudget(e)
		if z.ColdStartSeconds != nil && int64(*z.ColdStartSeconds) < budget {
			f.errorf("%s.coldStartSeconds %d is shorter than the model's start-up budget of %d seconds (its startup probe's, by its size): a request could be refused while the engine still starts; raise it, or lower probes.startup", p, *z.ColdStartSeconds, budget)
		}
		if !resolve.ExtensionOn(s) {
			if s.Router.VersionErr == nil && s.Router.Version.Version.Less(routerIncomingAt) {
				f.errorf("%s needs router %s or later, the first that counts vllm:num_incoming_requests, which wakes the model, and the router is %s: use a newer router image", p, routerIncomingAt, s.Router.Version)
			}
			if !warned {
				warned = true
				f.warnf("%s: the production-stack router does not hold requests: while the model is at zero the first requests get 503 (\"temporarily unavailable\") until an engine is ready, up to %d seconds; clients must retry. With inferenceExtension the endpoint picker holds them until the engine is ready", p, build.ColdStartSeconds(e))
			}
			continue
		}
		if x := s.Extension; x.ReleaseErr == nil && !upstream.PickerFlowControl(x.Release) {
			f.errorf("%s: the endpoint picker %s sets no request TTL (flow control's defaultRequestTTL comes with GAIE v1.4.0 and llm-d v0.7.0): use a newer picker image", p, x.Release)
		}
	}
}

// ScaledObjectFields are the fields that make a stack compose KEDA
// ScaledObjects (ScaledObjectFields).
func ScaledObjectFields(s *resolve.Stack) string {
	var keda, zero bool
	for _, e := range s.Engines {
		switch {
		case e.ScaleToZero != nil:
			zero = true
		case e.Autoscaled && resolve.AutoscalerType(e.Cfg.Autoscaling) == resolve.AutoscalerKEDA:
			keda = true
		}
	}
	switch {
	case zero && keda:
		return "autoscaling.type keda and scaleToZero"
	case zero:
		return "scaleToZero"
	}
	return "autoscaling.type keda"
}
