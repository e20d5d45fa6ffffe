# function-vllm-stack developer targets.
#
#   make tools       build the pinned CLIs into .tools/bin (reused while their go.mod/go.sum are unchanged)
#   make build       go build -o _output/bin/function .
#   make render      render example/ through the locally running function (crossplane render)
#                    (stdout holds only the rendered YAML: every tool rule and `build`
#                    print their progress to stderr; test/render TestMakeRenderStdout)
#   make validate    render --include-full-xr, then `crossplane beta validate` against the XRD, offline
#   make test        test-unit, test-fuzz, test-kubediff, test-render, test-xpkg, e2e, e2e-crossplane,
#                    e2e-crossplane-oldest (in that order)
#   make test-kubediff  internal/kubeapi's rules, and every object the function composes, against
#                    k8s.io/kubernetes' own validation and the pinned CRDs (tools/kubediff)
#   make test-unit   go vet ./... + go test of every package outside test/, tools/promql and tools/llmd-kvcache
#   make test-fuzz   go test of test/fuzz (the fuzz targets' seed corpora and the secrets test), then
#                    every fuzz target fuzzed for a bounded time, about a minute in all (hack/fuzz.sh)
#   make fuzz        every fuzz target fuzzed longer (FUZZ_LONG, FUZZ_LONG_E2E), building on the corpus
#                    in _output/fuzz/cache; a failing input lands in testdata/fuzz/ of its package
#   make test-render golden render tests through the real CLI and function (test/render);
#                    UPDATE=1 rewrites example/golden/
#   make test-xpkg   build both packages, check them, run the function from its image and validate
#                    the examples against the XRD in the Configuration (test/xpkg)
#   make e2e         the API-server suite (hack/e2e.sh)
#   make e2e-crossplane  the same control plane plus real Crossplane core (the newest
#                    release tested) and RBAC manager installing the Configuration as README
#                    says (hack/e2e-crossplane.sh; root)
#   make e2e-crossplane-oldest  the same on the oldest Crossplane the packages claim
#   make bench-crossplane  scale benchmark through real Crossplane: BENCH_STACKS
#                    (default 1,10,50) seed stacks at once; report in BENCH_OUT (root)
#   make xpkg        static linux/amd64 binary -> runtime image tarball -> _output/function-vllm-stack.xpkg,
#                    and the Configuration (package-configuration/: the XRD, its Composition, dependsOn
#                    the Function) -> _output/function-vllm-stack-configuration.xpkg; VERSION and
#                    XPKG_REGISTRY (default ghcr.io/vllm-project) set the Function reference it depends on
#   make xpkg-push   push both to XPKG_REGISTRY, tagged VERSION
#   make generate    go generate (controller-gen is built first)
#   make helm2stack VALUES=values.yaml [NAME=vllm] [NAMESPACE=]
#                    convert a values file of the production-stack Helm chart
#                    (0.1.12) into a ProductionStack on stdout (cmd/helm2stack)
#   make helm        the pinned Helm CLI into .tools/bin/helm
#   make helm-compare  helm template of the chart (CHART_SRC: a production-stack
#                    checkout or its git mirror) for every helm2stack scenario,
#                    compared with the scenarios' expect files; not part of test
#   make tools-v2 / render-v2   optional: newer CLI (crossplane/cli/v2) + core binary renderer
#
# Every tool is a Go module under tools/ or hack/ pinned by go.mod/go.sum and
# fetched through the Go module proxy; no Docker engine is needed.
# Variables: RENDER_ARGS, FUNCTION_ARGS, RENDER_XR, RENDER_COMPOSITION,
# RENDER_FUNCTIONS, VALIDATE_ARGS (see hack/render.sh, hack/validate.sh).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

GO ?= go

ROOT       := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
OUTPUT_DIR := $(ROOT)/_output
TOOLS_BIN  := $(ROOT)/.tools/bin

FUNCTION_BIN := $(OUTPUT_DIR)/bin/function

# Reads the version of module $(1) required in go.mod file $(2).
mod_version = $(shell grep -oE '$(1) v[^ ]+' $(2) | head -n1 | cut -d' ' -f2)

# Tool modules build on their own: no go.work, no go.mod/go.sum edits.
TOOL_GO := GOWORK=off CGO_ENABLED=0 $(GO) build -mod=readonly -trimpath

# Crossplane CLI ("crank" of crossplane/crossplane), pinned in tools/crossplane/go.mod.
CROSSPLANE         := $(TOOLS_BIN)/crossplane
CROSSPLANE_VERSION := $(call mod_version,github.com/crossplane/crossplane/v2,$(ROOT)/tools/crossplane/go.mod)

# Crossplane core: the newest release the packages are tested on, pinned in
# tools/crossplane-core (make e2e-crossplane runs it). The newer standalone CLI
# (github.com/crossplane/cli/v2) runs its `internal render` (`crossplane
# render --crossplane-binary`); that CLI is optional: only `make tools-v2` /
# `make render-v2` build it.
CROSSPLANE_V2           := $(TOOLS_BIN)/crossplane-v2
CROSSPLANE_V2_VERSION   := $(call mod_version,github.com/crossplane/cli/v2,$(ROOT)/tools/crossplane-cli/go.mod)
CROSSPLANE_CORE         := $(TOOLS_BIN)/crossplane-core
CROSSPLANE_CORE_VERSION := $(call mod_version,github.com/crossplane/crossplane/v2,$(ROOT)/tools/crossplane-core/go.mod)

# The oldest Crossplane core the packages claim (spec.crossplane.version
# ">=v2.0.0"; docs/versions.md), pinned in tools/crossplane-core-oldest:
# make e2e-crossplane-oldest runs the suite on it. CROSSPLANE_CORE is the
# newest release tested. (v2.0.0 keeps its version in internal/version.)
CROSSPLANE_CORE_OLDEST         := $(TOOLS_BIN)/crossplane-core-oldest
CROSSPLANE_CORE_OLDEST_VERSION := $(call mod_version,github.com/crossplane/crossplane/v2,$(ROOT)/tools/crossplane-core-oldest/go.mod)

# LeaderWorkerSet's manager (kubernetes-sigs/lws), pinned in tools/lws/go.mod
# at the function's version of sigs.k8s.io/lws; make e2e-crossplane runs it.
LWS_MANAGER         := $(TOOLS_BIN)/lws-manager
LWS_VERSION         := $(call mod_version,sigs.k8s.io/lws,$(ROOT)/tools/lws/go.mod)

# The Gateway API Inference Extension's endpoint picker (cmd/epp), pinned in
# tools/epp/go.mod at v1.5.0, the last GAIE release that carries it (e2e
# TestEndpointPicker runs it against the real kube-apiserver).
EPP         := $(TOOLS_BIN)/epp
EPP_VERSION := $(call mod_version,sigs.k8s.io/gateway-api-inference-extension,$(ROOT)/tools/epp/go.mod)

# KEDA's operator (github.com/kedacore/keda/v2 cmd/operator), pinned in
# tools/keda/go.mod with KEDA's own replace block (make e2e-keda runs it).
KEDA_OPERATOR := $(TOOLS_BIN)/keda-operator
KEDA_VERSION  := $(call mod_version,github.com/kedacore/keda/v2,$(ROOT)/tools/keda/go.mod)

# Helm CLI, pinned in tools/helm/go.mod (only make helm-compare uses it).
HELM         := $(TOOLS_BIN)/helm
HELM_VERSION := $(call mod_version,helm.sh/helm/v4,$(ROOT)/tools/helm/go.mod)

# controller-gen, pinned in tools/controller-gen/go.mod (used by go generate).
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen

# Runtime image tarball writer (go-containerregistry), pinned in hack/imagebuild/go.mod.
IMAGEBUILD := $(TOOLS_BIN)/imagebuild

# Extra `crossplane render` args, e.g.
#   make render RENDER_ARGS="--include-function-results --observed-resources=example/observed.yaml"
RENDER_ARGS ?=
# Extra function flags for render, e.g. FUNCTION_ARGS=--debug
FUNCTION_ARGS ?=
# Extra `crossplane beta validate` args, e.g. VALIDATE_ARGS=--skip-success-results
VALIDATE_ARGS ?=
# Inputs for render/validate.
RENDER_XR          ?= example/xr.yaml
RENDER_COMPOSITION ?= example/composition.yaml
RENDER_FUNCTIONS   ?= example/functions.yaml

# Package build.
XPKG_ARCH      ?= amd64
XPKG_BIN       := $(OUTPUT_DIR)/bin/linux_$(XPKG_ARCH)/function
XPKG_IMAGE_TAR := $(OUTPUT_DIR)/image.tar
XPKG_FILE      := $(OUTPUT_DIR)/function-vllm-stack.xpkg

# The release version of both packages, one place: VERSION. Push the Function
# as $(FUNCTION_PACKAGE):$(VERSION) and the Configuration under the same tag;
# the Configuration depends on exactly that Function version.
VERSION := $(shell cat $(ROOT)/VERSION)
# Where the packages are pushed (registry host and path, no tag). The
# Configuration's dependsOn names $(XPKG_REGISTRY)/function-vllm-stack, so
# build it with the registry you push to: make xpkg XPKG_REGISTRY=registry.example.com/platform
XPKG_REGISTRY    ?= ghcr.io/vllm-project
FUNCTION_PACKAGE := $(XPKG_REGISTRY)/function-vllm-stack
CONFIG_ROOT      := $(OUTPUT_DIR)/package-configuration
CONFIG_XPKG_FILE := $(OUTPUT_DIR)/function-vllm-stack-configuration.xpkg

export CROSSPLANE CROSSPLANE_VERSION FUNCTION_BIN FUNCTION_ARGS RENDER_ARGS VALIDATE_ARGS

.PHONY: all tools tools-v2 helm epp keda helm2stack helm-compare build render render-v2 validate test test-unit test-llmd-kvcache test-fuzz test-kubediff test-render test-xpkg e2e e2e-keda e2e-crossplane e2e-crossplane-oldest bench bench-crossplane fuzz xpkg xpkg-push e2e-xpkg generate clean clean-tools

all: build

# ---------------------------------------------------------------------------
# Tools

tools: $(CROSSPLANE) $(IMAGEBUILD) $(CONTROLLER_GEN)

tools-v2: $(CROSSPLANE_V2) $(CROSSPLANE_CORE)

$(CROSSPLANE): $(ROOT)/tools/crossplane/go.mod $(ROOT)/tools/crossplane/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building crossplane CLI $(CROSSPLANE_VERSION) (cold: ~6 min on 2 cores)" >&2
	@cd $(ROOT)/tools/crossplane && $(TOOL_GO) \
		-ldflags "-s -w -X github.com/crossplane/crossplane/v2/internal/version.version=$(CROSSPLANE_VERSION)" \
		-o $@.tmp github.com/crossplane/crossplane/v2/cmd/crank
	@mv -f $@.tmp $@

$(CROSSPLANE_V2): $(ROOT)/tools/crossplane-cli/go.mod $(ROOT)/tools/crossplane-cli/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building crossplane CLI (crossplane/cli) $(CROSSPLANE_V2_VERSION)" >&2
	@cd $(ROOT)/tools/crossplane-cli && $(TOOL_GO) \
		-ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_V2_VERSION)" \
		-o $@.tmp github.com/crossplane/cli/v2/cmd/crossplane
	@mv -f $@.tmp $@

$(LWS_MANAGER): $(ROOT)/tools/lws/go.mod $(ROOT)/tools/lws/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building the LeaderWorkerSet manager $(LWS_VERSION)" >&2
	@cd $(ROOT)/tools/lws && $(TOOL_GO) -ldflags "-s -w" -o $@.tmp sigs.k8s.io/lws/cmd
	@mv -f $@.tmp $@

epp: $(EPP)

$(EPP): $(ROOT)/tools/epp/go.mod $(ROOT)/tools/epp/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building the endpoint picker (GAIE cmd/epp) $(EPP_VERSION) (cold: ~3 min on 2 cores)" >&2
	@cd $(ROOT)/tools/epp && $(TOOL_GO) -ldflags "-s -w" -o $@.tmp sigs.k8s.io/gateway-api-inference-extension/cmd/epp
	@mv -f $@.tmp $@

keda: $(KEDA_OPERATOR)

$(KEDA_OPERATOR): $(ROOT)/tools/keda/go.mod $(ROOT)/tools/keda/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building KEDA's operator $(KEDA_VERSION) (cold: ~6 min, 7 CPU-min on 2 cores)" >&2
	@cd $(ROOT)/tools/keda && $(TOOL_GO) -ldflags "-s -w" -o $@.tmp github.com/kedacore/keda/v2/cmd/operator
	@mv -f $@.tmp $@

$(CROSSPLANE_CORE_OLDEST): $(ROOT)/tools/crossplane-core-oldest/go.mod $(ROOT)/tools/crossplane-core-oldest/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building crossplane core $(CROSSPLANE_CORE_OLDEST_VERSION), the oldest claimed (cold: ~4 CPU-min)" >&2
	@cd $(ROOT)/tools/crossplane-core-oldest && $(TOOL_GO) \
		-ldflags "-s -w -X github.com/crossplane/crossplane/v2/internal/version.version=$(CROSSPLANE_CORE_OLDEST_VERSION)" \
		-o $@.tmp github.com/crossplane/crossplane/v2/cmd/crossplane
	@mv -f $@.tmp $@

$(CROSSPLANE_CORE): $(ROOT)/tools/crossplane-core/go.mod $(ROOT)/tools/crossplane-core/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building crossplane core $(CROSSPLANE_CORE_VERSION)" >&2
	@cd $(ROOT)/tools/crossplane-core && $(TOOL_GO) \
		-ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_CORE_VERSION)" \
		-o $@.tmp github.com/crossplane/crossplane/v2/cmd/crossplane
	@mv -f $@.tmp $@

helm: $(HELM)

$(HELM): $(ROOT)/tools/helm/go.mod $(ROOT)/tools/helm/go.sum
	@mkdir -p $(TOOLS_BIN)
	@echo "building helm $(HELM_VERSION)" >&2
	@cd $(ROOT)/tools/helm && $(TOOL_GO) \
		-ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" \
		-o $@.tmp helm.sh/helm/v4/cmd/helm
	@mv -f $@.tmp $@

$(CONTROLLER_GEN): $(ROOT)/tools/controller-gen/go.mod $(ROOT)/tools/controller-gen/go.sum
	@bash $(ROOT)/tools/controller-gen/build.sh

$(IMAGEBUILD): $(ROOT)/hack/imagebuild/go.mod $(ROOT)/hack/imagebuild/go.sum $(ROOT)/hack/imagebuild/main.go
	@mkdir -p $(TOOLS_BIN)
	@cd $(ROOT)/hack/imagebuild && $(TOOL_GO) -o $@.tmp .
	@mv -f $@.tmp $@

# ---------------------------------------------------------------------------
# Function

build:
	@mkdir -p $(OUTPUT_DIR)/bin
	@$(GO) build -o $(FUNCTION_BIN) .

generate: $(CONTROLLER_GEN)
	$(GO) generate -tags generate ./...
	$(GO) test ./docs -run TestAPIReference -update

# ---------------------------------------------------------------------------
# Tests
#
# test/render and test/xpkg run external binaries, so they never use the go
# test cache (-count=1); CI=true makes a missing binary a failure, not a skip.
# GO_TEST_FLAGS adds go test flags, e.g. GO_TEST_FLAGS="-run TestFatal -v".

GO_TEST_FLAGS ?=
UPDATE        ?=

test: test-unit test-fuzz test-kubediff test-render test-xpkg e2e e2e-crossplane e2e-crossplane-oldest

# tools/promql parses the dashboard's and the alerts' queries with
# Prometheus's own parser, and evaluates the rendered alert rules and KEDA
# trigger queries with Prometheus's rules manager and engine: its own
# module, so the function does not depend on github.com/prometheus/prometheus.
test-unit:
	$(GO) vet ./...
	$(GO) test $(GO_TEST_FLAGS) $$($(GO) list ./... | grep -v '^github.com/vllm-project/function-vllm-stack/test/')
	cd $(ROOT)/tools/promql && GOWORK=off $(GO) test -count=1 $(GO_TEST_FLAGS) ./...
	$(MAKE) test-llmd-kvcache

# tools/llmd-kvcache decodes the rendered precise prefix-cache routing
# (example/golden/precise-prefix.yaml) with llm-d-kv-cache v0.9.0, the module
# llm-d's picker v0.9.0 and v0.10.0 pin (the picker itself is not served by
# the Go module proxy): its own module, without cgo.
test-llmd-kvcache:
	cd $(ROOT)/tools/llmd-kvcache && GOWORK=off CGO_ENABLED=0 $(GO) test -count=1 $(GO_TEST_FLAGS) ./...

# Fuzzing (hack/fuzz.sh): one target at a time, since go test fuzzes one per
# run; FUZZTIME for each target of fn, FUZZTIME_E2E for each of test/fuzz
# (RunFunction end to end; 45s, as their seeds take 20-40 s to replay before
# the first new input). The bounded run of `make test` takes about two
# minutes on 2 cores; `make fuzz` runs longer. A failing input is written to
# testdata/fuzz/<Target>/ of its package, where go test runs it from then on:
# commit it with the fix. `make test` starts from the seeds and testdata/fuzz
# alone (a fresh corpus), so it takes the same time every run; `make fuzz`
# keeps the corpus the fuzzer grows in _output/fuzz/cache and builds on it.
FUZZTIME      ?= 4s
FUZZTIME_E2E  ?= 45s
FUZZ_LONG     ?= 2m
FUZZ_LONG_E2E ?= 10m

test-fuzz:
	$(GO) test -count=1 $(GO_TEST_FLAGS) ./test/fuzz/
	FUZZTIME=$(FUZZTIME) FUZZTIME_E2E=$(FUZZTIME_E2E) bash $(ROOT)/hack/fuzz.sh

fuzz:
	FUZZTIME=$(FUZZ_LONG) FUZZTIME_E2E=$(FUZZ_LONG_E2E) FUZZ_MINIMIZE=10s FUZZ_CACHE=$(OUTPUT_DIR)/fuzz/cache \
		bash $(ROOT)/hack/fuzz.sh

# internal/kubeapi, and every object the function composes, against the
# validation of k8s.io/kubernetes (the version e2e runs) and the CRDs e2e/crds
# pins: its own module, tools/kubediff, so the function does not depend on
# k8s.io/kubernetes. It compiles what tools/kube/build.sh compiles for e2e.
# KUBEDIFF_FUZZTIME > 0 fuzzes each of its two targets that long. Then
# internal/kubeapi's port of LeaderWorkerSet's webhooks against the real ones
# (tools/lwswebhook: the controller-runtime they need builds with neither the
# function's nor tools/kubediff's modules).
KUBEDIFF_FUZZTIME ?= 0

test-kubediff:
	cd $(ROOT)/tools/kubediff && GOWORK=off $(GO) test -count=1 $(GO_TEST_FLAGS) ./...
	cd $(ROOT)/tools/lwswebhook && GOWORK=off $(GO) test -count=1 $(GO_TEST_FLAGS) ./...
	$(if $(filter-out 0,$(KUBEDIFF_FUZZTIME)),cd $(ROOT)/tools/kubediff && for t in FuzzAgainstAPIServer FuzzComposedObjects; do \
		GOWORK=off $(GO) test -run XXX -fuzz "^$$t\$$" -fuzztime $(KUBEDIFF_FUZZTIME) -fuzzminimizetime 5s . || exit 1; done)

test-render: build $(CROSSPLANE)
	CI=true FUNCTION_BIN=$(FUNCTION_BIN) CROSSPLANE=$(CROSSPLANE) \
		$(GO) test -count=1 $(GO_TEST_FLAGS) $(if $(UPDATE),-run '^TestGolden') ./test/render/ $(if $(UPDATE),-args -update)

test-xpkg: xpkg
	CI=true XPKG=$(XPKG_FILE) CONFIG_XPKG=$(CONFIG_XPKG_FILE) FUNCTION_PACKAGE=$(FUNCTION_PACKAGE) CROSSPLANE=$(CROSSPLANE) \
		$(GO) test -count=1 $(GO_TEST_FLAGS) ./test/xpkg/

# The API-server suite: builds kube-apiserver, kube-controller-manager and
# etcd (pinned, cold about 20 minutes, reused afterwards), starts them on
# free 127.0.0.1 ports and stops them. TestEndpointPicker runs the endpoint
# picker ($(EPP), GAIE $(EPP_VERSION)) in a private network namespace (as root;
# it skips otherwise).
e2e: $(EPP)
	EPP=$(EPP) bash $(ROOT)/hack/e2e.sh

# The scale-from-zero chain with the real programs (e2e TestScaleFromZeroKEDA):
# the e2e control plane plus kube-scheduler and the kubelet stand-in, the
# endpoint picker, KEDA's operator and Prometheus (Debian's package, pinned in
# hack/e2e-keda.sh), in a private network namespace (root). Not in make test.
e2e-keda: $(EPP) $(KEDA_OPERATOR)
	EPP=$(EPP) KEDA_OPERATOR=$(KEDA_OPERATOR) bash $(ROOT)/hack/e2e-keda.sh

# The same control plane plus kube-scheduler, a kubelet stand-in, and real
# Crossplane core and RBAC manager (the core binary of tools/crossplane-core,
# cold about 6 CPU-minutes) that install the package from an OCI registry on
# 127.0.0.1 and call the function binary it carries. Runs as root in private
# network and mount namespaces (unshare).
#
# It installs the stack as README does: the ClusterRole, then a Configuration
# built for the tests' registry (E2E_XPKG_REGISTRY: a fixed 127.0.0.1 port is
# free in their private network namespace), whose Function dependency
# Crossplane pulls from there. Built next to, not over, the release build.
E2E_XPKG_REGISTRY    := 127.0.0.1:5000/vllm-project
E2E_CONFIG_XPKG_FILE := $(OUTPUT_DIR)/e2e/function-vllm-stack-configuration.xpkg

E2E_CROSSPLANE_ENV   := CROSSPLANE_CORE=$(CROSSPLANE_CORE) LWS_MANAGER=$(LWS_MANAGER) XPKG=$(XPKG_FILE) \
	CONFIG_XPKG=$(E2E_CONFIG_XPKG_FILE) XPKG_REGISTRY=$(E2E_XPKG_REGISTRY) VERSION=$(VERSION)

e2e-xpkg: xpkg
	$(call build_configuration,$(OUTPUT_DIR)/e2e/package-configuration,$(E2E_XPKG_REGISTRY)/function-vllm-stack,$(E2E_CONFIG_XPKG_FILE))

e2e-crossplane: $(CROSSPLANE_CORE) $(LWS_MANAGER) e2e-xpkg
	$(E2E_CROSSPLANE_ENV) bash $(ROOT)/hack/e2e-crossplane.sh

# The suite on the oldest Crossplane core claimed (tools/crossplane-core-oldest),
# its core CRDs from that module. make test runs E2E_OLDEST_RUN: README's
# install, every example stack, pod-level reasons, a refused stack, and the
# replicas hand-over to an autoscaler, which reads Crossplane's composed field
# manager in managedFields (stack/transition/handover.go) (about 2 minutes against 4.5
# for all); E2E_OLDEST_RUN= runs every test.
E2E_OLDEST_RUN ?= ^(TestCrossplaneIdentity|TestConfigurationPackage|TestFunctionPackage|TestStacks)$$/^Scenarios$$/^(Examples|PodReasons|Refused|HPAHandOver|ScaleToZeroHandOver)$$

e2e-crossplane-oldest: $(CROSSPLANE_CORE_OLDEST) $(LWS_MANAGER) e2e-xpkg
	$(E2E_CROSSPLANE_ENV) CROSSPLANE_CORE=$(CROSSPLANE_CORE_OLDEST) CROSSPLANE_CORE_MODULE=$(ROOT)/tools/crossplane-core-oldest \
		E2E_TEST_FLAGS='$(if $(E2E_OLDEST_RUN),-test.run $(E2E_OLDEST_RUN))' bash $(ROOT)/hack/e2e-crossplane.sh

# Benchmarks: RunFunction against the protobuf floor, and a gRPC load test.
# Not part of `test`: nothing fails on a time.
bench:
	bash $(ROOT)/hack/bench.sh

# Scale benchmark through real Crossplane (e2e/crossplane TestBench, the
# e2e-crossplane environment): BENCH_STACKS seed stacks applied at once per
# round; time until all are Ready, CPU time of Crossplane core and the
# function per reconcile, ramp and steady state; a markdown report in
# BENCH_OUT. Not part of `test`: nothing fails on a time.
BENCH_STACKS ?= 1,10,50
BENCH_OUT    ?= $(OUTPUT_DIR)/bench-crossplane.md
bench-crossplane: $(CROSSPLANE_CORE) $(LWS_MANAGER) e2e-xpkg
	$(E2E_CROSSPLANE_ENV) CROSSPLANE_CORE_VERSION=$(CROSSPLANE_CORE_VERSION) \
		E2E_BENCH=$(BENCH_STACKS) E2E_BENCH_OUT=$(BENCH_OUT) bash $(ROOT)/hack/e2e-crossplane.sh

# ---------------------------------------------------------------------------
# Helm chart migration

# Convert a values file of the production-stack chart: the stack on stdout,
# dropped keys, notes and the Secrets to create on stderr; exit status 3
# when a key was dropped (see cmd/helm2stack).
VALUES    ?=
NAME      ?= vllm
NAMESPACE ?=
helm2stack:
	@test -n "$(VALUES)" || { echo "usage: make helm2stack VALUES=values.yaml [NAME=vllm] [NAMESPACE=ns]" >&2; exit 2; }
	@$(GO) run ./cmd/helm2stack --name "$(NAME)" $(if $(NAMESPACE),--namespace "$(NAMESPACE)") "$(VALUES)"

# helm template of the chart for every scenario of cmd/helm2stack, compared
# with the expect files (hack/helm-compare.sh). CHART_SRC: a production-stack
# checkout or git mirror; UPDATE_EXPECT=1 rewrites the expect files.
helm-compare: $(HELM)
	HELM=$(HELM) bash $(ROOT)/hack/helm-compare.sh

# ---------------------------------------------------------------------------
# Render / validate (the function runs locally on a free 127.0.0.1 port)

render: build $(CROSSPLANE)
	@$(ROOT)/hack/render.sh $(RENDER_XR) $(RENDER_COMPOSITION) $(RENDER_FUNCTIONS)

render-v2: build $(CROSSPLANE_V2) $(CROSSPLANE_CORE)
	@CROSSPLANE=$(CROSSPLANE_V2) CROSSPLANE_CORE=$(CROSSPLANE_CORE) \
		$(ROOT)/hack/render.sh $(RENDER_XR) $(RENDER_COMPOSITION) $(RENDER_FUNCTIONS)

validate: build $(CROSSPLANE)
	@$(ROOT)/hack/validate.sh $(RENDER_XR) $(RENDER_COMPOSITION) $(RENDER_FUNCTIONS)

# ---------------------------------------------------------------------------
# Package

xpkg: $(CROSSPLANE) $(IMAGEBUILD)
	@test -f $(ROOT)/package/crossplane.yaml || { echo "package/crossplane.yaml is missing" >&2; exit 1; }
	@mkdir -p $(dir $(XPKG_BIN))
	CGO_ENABLED=0 GOOS=linux GOARCH=$(XPKG_ARCH) $(GO) build -trimpath -ldflags "-s -w" -o $(XPKG_BIN) .
	$(IMAGEBUILD) -binary $(XPKG_BIN) -output $(XPKG_IMAGE_TAR) -os linux -arch $(XPKG_ARCH)
	rm -f $(XPKG_FILE)
	$(CROSSPLANE) xpkg build --package-root=$(ROOT)/package \
		--embed-runtime-image-tarball=$(XPKG_IMAGE_TAR) -o $(XPKG_FILE)
	$(call build_configuration,$(CONFIG_ROOT),$(FUNCTION_PACKAGE),$(CONFIG_XPKG_FILE))
	@ls -l $(XPKG_FILE) $(CONFIG_XPKG_FILE)

# build_configuration ROOT,FUNCTION_PACKAGE,XPKG: stage the Configuration's
# root in ROOT depending on FUNCTION_PACKAGE at VERSION, and build it into XPKG.
define build_configuration
bash $(ROOT)/hack/configuration.sh $(1) $(2) $(VERSION)
rm -f $(3)
$(CROSSPLANE) xpkg build --package-root=$(1) --examples-root=$(1)/examples -o $(3)
endef

# Push both packages under VERSION: the Function as $(FUNCTION_PACKAGE):$(VERSION),
# the Configuration (which depends on exactly that) next to it. Needs
# registry credentials (crossplane xpkg login or a docker config).
xpkg-push: xpkg
	$(CROSSPLANE) xpkg push -f $(XPKG_FILE) $(FUNCTION_PACKAGE):$(VERSION)
	$(CROSSPLANE) xpkg push -f $(CONFIG_XPKG_FILE) $(FUNCTION_PACKAGE)-configuration:$(VERSION)

# ---------------------------------------------------------------------------

clean:
	rm -rf $(OUTPUT_DIR)

clean-tools:
	rm -f $(CROSSPLANE) $(CROSSPLANE_V2) $(CROSSPLANE_CORE) $(CROSSPLANE_CORE_OLDEST) $(CONTROLLER_GEN) $(IMAGEBUILD) $(HELM) $(KEDA_OPERATOR)
	rm -rf $(ROOT)/.tools/prometheus
	rm -rf $(ROOT)/.tools/validate-cache
