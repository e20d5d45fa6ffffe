package resolve

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrQuantityExponent: a quantity's exponent has more than two digits.
var ErrQuantityExponent = errors.New("the exponent is out of range")

// quantityExponent is the exponent of a quantity written as 1e3 or 5E-2
// (not the suffix E, exa).
var quantityExponent = regexp.MustCompile(`[eE][+-]?([0-9]+)$`)

// ParseQuantity is resource.ParseQuantity for what the user wrote. A
// quantity whose exponent has more than two digits is refused before it is
// parsed: apimachinery takes seconds to parse 1e-17170000 or to compare
// 1e17170000 (found by FuzzQuantities), and no quantity Kubernetes holds
// (1n to 8Ei) needs one.
func ParseQuantity(v string) (resource.Quantity, error) {
	if m := quantityExponent.FindStringSubmatch(v); m != nil && len(m[1]) > 2 {
		return resource.Quantity{}, ErrQuantityExponent
	}
	return resource.ParseQuantity(v)
}

// maxQuantity is the largest quantity that stays itself: larger ones are
// clamped to it ("1000000000000000000Ki") or written back as another value
// ("1000000000000000000000" as "1").
var maxQuantity = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// QuantityInRange reports whether q is below maxQuantity and is written as
// itself, so the objects say what the user wrote.
func QuantityInRange(q resource.Quantity) bool {
	if q.Cmp(maxQuantity) >= 0 {
		return false
	}
	again, err := ParseQuantity(q.String())
	return err == nil && again.Cmp(q) == 0
}

// GPUs parses resources.gpu: a whole number, "" meaning none.
func GPUs(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a whole number of GPUs: %q", v)
	}
	return n, nil
}

const Gib = 1 << 30

// Gibibytes reads an LMCache buffer size, a Kubernetes quantity such as 4Gi
// or a plain number of GiB such as 4 or 2.5, as a number of GiB: LMCache's
// LMCACHE_MAX_LOCAL_*_SIZE variables take a number of GB and cannot parse
// "4Gi". The size must be at least one byte and fit an int64 of bytes: a
// disk buffer sizes an emptyDir.
func Gibibytes(v string) (float64, error) {
	g, err := parseGibibytes(v)
	if err != nil {
		return 0, err
	}
	if b := g * Gib; !(b >= 1) || b >= math.MaxInt64 {
		return 0, fmt.Errorf("must be from 1 byte to 8 EiB: %q", v)
	}
	return g, nil
}

func parseGibibytes(v string) (float64, error) {
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if !(x > 0) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("must be a positive number: %q", v)
		}
		return x, nil
	}
	q, err := ParseQuantity(v)
	if err != nil {
		return 0, err
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("must be positive: %q", v)
	}
	return q.AsApproximateFloat64() / Gib, nil
}
