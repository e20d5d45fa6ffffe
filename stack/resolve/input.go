package resolve

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
)

// DecodeInput decodes the function's Input (as encoding/json decodes it into
// a map) strictly. The SDK's decoder
// words its errors differently from call to call (encoding/json/v2 does so
// on purpose), which would change the refusal's message, and so the XR's
// status, on every reconcile; this one's messages are the same every time
// and name the field.
func DecodeInput(raw map[string]any) (*v1beta1.Input, error) {
	in := &v1beta1.Input{}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the function's Input: %w", err)
	}
	strict, err := sigsjson.UnmarshalStrict(b, in)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		msg = goStructField.ReplaceAllString(msg, "the function's Input field ")
		if !strings.Contains(msg, "Input field") {
			if at, leaf := locate(raw, reflect.TypeFor[v1beta1.Input](), "Input"); at != "" {
				msg = "the function's Input field " + strings.TrimPrefix(at, "Input.") + ": " + msg
				if leaf == reflect.TypeFor[metav1.Duration]() {
					msg += "; use a duration such as 30s or 2m"
				}
			}
		}
		return nil, fmt.Errorf("cannot decode the function's Input in the Composition: %s", msg)
	}
	if len(strict) > 0 {
		msgs := make([]string, 0, len(strict))
		for _, e := range strict {
			msgs = append(msgs, strings.TrimPrefix(e.Error(), "json: "))
		}
		sort.Strings(msgs)
		return nil, fmt.Errorf("the function's Input in the Composition has fields it does not know: %s; check the spelling against the Input CRD (package/input)", strings.Join(msgs, "; "))
	}
	return in, nil
}
