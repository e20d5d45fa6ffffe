package kubeapi

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ContainerResources checks a container's resources as
// validateResourceRequirements (pkg/apis/core/validation) does, with
// ValidateContainerResourceName and ValidateResourceQuantityValue:
//   - no resource claims: they name entries of the pod's spec.resourceClaims,
//     and the stack's pods declare none (validateResourceClaimNames);
//   - a name without a domain is cpu, memory, ephemeral-storage or
//     hugepages-<page size>; a name with a domain outside kubernetes.io is an
//     extended resource (nvidia.com/gpu), counted in whole units;
//   - no quantity below 0, no request above its limit; extended resources
//     and huge pages are never overcommitted (a limit equal to the request);
//   - huge pages come in whole pages, and only beside cpu or memory.
//
// The caller keeps quantities within what a quantity holds. A page size is
// taken only in the form nodes advertise (2Mi, 1Gi): the API server parses
// any quantity there, and a huge exponent takes it seconds.
func ContainerResources(r corev1.ResourceRequirements) []Problem {
	var ps problems
	if len(r.Claims) > 0 {
		ps.add(".claims", "is not supported: it names resource claims of the pod (spec.resourceClaims, dynamic resource allocation), and the stack's pods declare none, so Kubernetes refuses any; remove it")
	}
	hugePages, cpuOrMemory := false, false
	for _, list := range []string{"limits", "requests"} {
		l := r.Limits
		if list == "requests" {
			l = r.Requests
		}
		for _, name := range slices.Sorted(maps.Keys(l)) {
			fld := "." + list + "[" + string(name) + "]"
			q := l[name]
			s := string(name)
			whole := ""
			switch {
			case s == "cpu" || s == "memory":
				cpuOrMemory = true
			case s == "ephemeral-storage":
			case strings.HasPrefix(s, hugePagesPrefix):
				hugePages = true
				if page, ok := hugePageSize(s); !ok {
					ps.add(fld, "%s is not a huge page resource Kubernetes takes here: use hugepages-<page size>, such as hugepages-2Mi or hugepages-1Gi", Quote(s))
				} else if q.Sign() >= 0 && !wholeMultiple(q, page) {
					whole = "a whole number of " + strings.TrimPrefix(s, hugePagesPrefix) + " pages"
				}
			case !strings.Contains(s, "/"):
				ps.add(fld, "%s is not a resource a container can request: use cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain such as nvidia.com/gpu", Quote(s))
			default:
				if msgs := validation.IsQualifiedName(s); len(msgs) > 0 {
					ps.add(fld, "%s is not a valid resource name: %s", Quote(s), strings.Join(msgs, "; "))
				} else if native(s) {
					// kubernetes.io names: the API server checks no more.
				} else if msgs := validation.IsQualifiedName("requests." + s); len(msgs) > 0 {
					ps.add(fld, "%s is not a valid extended resource name: with the prefix requests. that quotas give it, %s", Quote(s), strings.Join(msgs, "; "))
				} else if q.Sign() >= 0 && q.MilliValue()%1000 != 0 {
					whole = "a whole number"
				}
			}
			lim, hasLim := r.Limits[name]
			switch {
			case q.Sign() < 0:
				ps.add(fld, "%s is invalid: must be 0 or more", q.String())
			case whole != "":
				ps.add(fld, "%s is invalid: %s takes %s", q.String(), s, whole)
			case list == "limits":
			case hasLim && q.Cmp(lim) > 0:
				ps.add(fld, "%s is more than its limit %s: Kubernetes requires a limit of at least the request", q.String(), lim.String())
			case strings.HasPrefix(s, hugePagesPrefix) && (!hasLim || q.Cmp(lim) != 0):
				ps.add(fld, "%s needs a limit equal to it: Kubernetes cannot overcommit huge pages", q.String())
			case !overcommitAllowed(s) && (!hasLim || q.Cmp(lim) != 0):
				ps.add(fld, "%s needs a limit equal to it: Kubernetes cannot overcommit an extended resource such as a GPU", q.String())
			}
		}
	}
	if hugePages && !cpuOrMemory {
		ps.add("", "requests huge pages without cpu or memory: Kubernetes requires a cpu or memory request or limit beside huge pages")
	}
	return ps.list
}

// overcommitAllowed: helper.IsOvercommitAllowed, a native resource that is not
// huge pages.
func overcommitAllowed(name string) bool {
	return (!strings.Contains(name, "/") || native(name)) && !strings.HasPrefix(name, hugePagesPrefix)
}

const hugePagesPrefix = "hugepages-"

// pageSize is a page size as nodes advertise it.
var pageSize = regexp.MustCompile(`^[1-9][0-9]{0,6}(Ki|Mi|Gi)$`)

func hugePageSize(name string) (resource.Quantity, bool) {
	s := strings.TrimPrefix(name, hugePagesPrefix)
	if !pageSize.MatchString(s) {
		return resource.Quantity{}, false
	}
	return resource.MustParse(s), true
}

// wholeMultiple: helper.IsHugePageResourceValueDivisible.
func wholeMultiple(q, page resource.Quantity) bool {
	return page.Value() > 0 && q.Value()%page.Value() == 0
}

// native: helper.IsNativeResource for a name with a domain.
func native(name string) bool { return strings.Contains(name, "kubernetes.io/") }
