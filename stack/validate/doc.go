// Package validate holds every check over a resolved stack: the spec's
// fields, the XRD's rules, what each release accepts (flags, variables,
// images), sizing, routing and topology. A check returns findings (errors
// name the field and the fix; warnings become events) and changes nothing;
// Validate (validate.go) runs them all before anything is composed.
//
// A check may read what build renders (the argv, a pod) to check it as the
// program will see it; builders never call a check. It imports names,
// resolve and build of stack/ (stack/layers_test.go).
package validate
