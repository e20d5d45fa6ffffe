//go:build generate

// Remove existing and generate new input manifests.
//go:generate rm -rf ../package/input/
//go:generate ../.tools/bin/controller-gen paths=./v1beta1 object crd:crdVersions=v1 output:artifacts:config=../package/input

package input
