//go:build generate

// Generate definition.yaml and legacy/definition.yaml from the Go types in
// v1alpha1. Needs controller-gen: bash tools/controller-gen/build.sh.
//go:generate go run ./gen

package xrd
