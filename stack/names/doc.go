// Package names holds what identifies a stack's objects: object names
// derived from the stack's and the models' names (as the production-stack
// chart derives them), composition resource names (keys), labels and
// ports. Everything here is a pure function of identifiers.
//
// It is the lowest layer of the stack library (names ← resolve ← build ←
// validate, transition ← stack; stack/layers_test.go): it reads no spec,
// no release and no observed state, and imports nothing of stack/ but the
// leaves. A key names one kind for the life of a stack (transition/keys.go).
package names
