# vscaler's entry points. Every target that needs a dependency installs it first (scripts/deps.sh,
# silent when all is present), so each works on a new machine by itself. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := build

CLUSTER_DIR := $(or $(VSCALER_CLUSTER_DIR),/tmp/vscaler-cluster)
export VSCALER_CLUSTER_DIR := $(CLUSTER_DIR)
CMAKE_FLAGS ?=
SOURCES = $(shell git ls-files '*.cpp' '*.h' 2>/dev/null)

# configure DIR, then CMake arguments: (re)generates a Ninja build tree once.
define configure
	@[ -f $(1)/build.ninja ] || cmake -S . -B $(1) -G Ninja -Wno-dev $(2) $(CMAKE_FLAGS) >/dev/null
endef

.PHONY: deps deps-test
deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

.PHONY: build build-vscaler build-asan build-tsan
## build: the release binary build/vscaler (and the release tests and benchmarks)
build: deps
	$(call configure,build/release,-DCMAKE_BUILD_TYPE=Release)
	@cmake --build build/release
	@cp build/release/vscaler build/vscaler
## build-vscaler: build/vscaler alone (no tests or benchmarks): what make demo runs
build-vscaler: deps
	$(call configure,build/release,-DCMAKE_BUILD_TYPE=Release)
	@echo "make: building build/vscaler (ccache makes a rebuild seconds)"
	@cmake --build build/release --target vscaler
	@cp build/release/vscaler build/vscaler
## build-asan: the unit tests and fuzz targets under AddressSanitizer + UndefinedBehaviorSanitizer
build-asan: deps
	$(call configure,build/asan,-DCMAKE_BUILD_TYPE=Debug -DVSCALER_SANITIZE=address)
	@cmake --build build/asan --target unit_tests fuzz_targets
## build-tsan: the unit tests under ThreadSanitizer
build-tsan: deps
	$(call configure,build/tsan,-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVSCALER_SANITIZE=thread)
	@cmake --build build/tsan --target unit_tests

.PHONY: test unit
## test: install, build, and run every test: unit (normal, ASan+UBSan, TSan), fuzz corpus
## replay, integration and end-to-end against a private local control plane
test: deps-test build build-asan build-tsan cluster-build helm-build
	@test/run.sh all
## unit: the unit tests of the release build only (fast)
unit: build
	@test/run.sh unit

.PHONY: fuzz soak
FUZZ_SECONDS ?= 60
## fuzz: every libFuzzer target (clang, ASan+UBSan) for FUZZ_SECONDS (60) each, from its seed
## corpus in test/fuzz/corpus/; prints executions per target; crashes go to build/fuzz/artifacts/
fuzz: deps-test
	@FUZZ_SECONDS=$(FUZZ_SECONDS) test/fuzz/run.sh
## soak: the long forms of the reliability tests (10 API server restarts, 20 SIGKILLs, minutes of
## concurrent writers and throttling) against a private local control plane
soak: deps-test build cluster-build
	@test/soak.sh

.PHONY: cluster-build cluster-up cluster-down vpa-build helm-build
## cluster-build: build (once, cached by version in ~/.cache/vscaler) etcd, kube-apiserver,
## kubectl, kube-controller-manager, kube-scheduler, kwok and metrics-server; prints progress
cluster-build: deps-test
	@test/cluster/build.sh >/dev/null
## cluster-up: the local cluster on 127.0.0.1 (VSCALER_CLUSTER=full, the default: controllers,
## scheduler, VSCALER_NODES=3 kwok nodes, metrics-server; minimal: etcd + kube-apiserver alone);
## prints the kubeconfig and kubectl paths
cluster-up: cluster-build
	@test/cluster/up.sh
## vpa-build: build (once, cached by version) VerticalPodAutoscaler's recommender, updater and
## admission-controller, the benchmarks' peers
vpa-build: deps-test
	@test/cluster/build.sh vpa >/dev/null
## helm-build: build (once, cached by version in ~/.cache/vscaler) helm from helm.sh/helm/v4, which
## the chart tests (test/scripts/helm_chart_test.sh, test/e2e/helm_chart_test.sh) run
helm-build: deps-test
	@test/cluster/build.sh helm >/dev/null
## cluster-down: stop what cluster-up started and remove its state
cluster-down:
	@test/cluster/down.sh

.PHONY: demo demo-down
## demo: the main job on a fresh machine (see README.md)
demo: build-vscaler cluster-up
	@scripts/demo.sh
## demo-down: stop everything demo started
demo-down:
	@scripts/demo.sh down

.PHONY: image
## image: the operator image as an OCI image archive, built without a container daemon (umoci):
## from scratch, build/vscaler and exactly the shared libraries it loads, user 65532, the
## manifests' args; written to build/vscaler-VERSION.oci.tar (tag VERSION)
image: build
	@scripts/deps.sh image
	@scripts/image.sh build/vscaler

.PHONY: deploy undeploy
KUBECTL ?= kubectl
CERT_DIR ?= $(or $(VSCALER_CERT_DIR),certs/out)
## deploy: install vscaler on the cluster of the current KUBECONFIG: `kubectl apply -k manifests/`,
## then its serving certificate (certs/install.sh; the CA and its key stay in CERT_DIR=certs/out)
deploy:
	@command -v $(KUBECTL) >/dev/null || { echo "deploy: $(KUBECTL) not found (set KUBECTL=...)" >&2; exit 1; }
	$(KUBECTL) apply -k manifests/
	@KUBECTL=$(KUBECTL) certs/install.sh --cert-dir $(CERT_DIR)
	@echo "deploy: done; the image vscaler:0.1.0 must be pullable by the nodes (manifests/README.md)"
## undeploy: remove what deploy installed, webhooks first; also the CRD, so every VerticalScaler
## (never a Deployment); CERT_DIR is kept
undeploy:
	@command -v $(KUBECTL) >/dev/null || { echo "undeploy: $(KUBECTL) not found (set KUBECTL=...)" >&2; exit 1; }
	@KUBECTL=$(KUBECTL) certs/install.sh --uninstall
	$(KUBECTL) delete -k manifests/ --ignore-not-found

.PHONY: install
PREFIX ?= /usr/local
## install: build/vscaler into $(PREFIX)/bin, and the kubectl-vscaler link beside it, so that
## `kubectl vscaler report` works (PREFIX=/usr/local by default; PREFIX=$$HOME/.local works too)
install: build-vscaler
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 build/vscaler $(DESTDIR)$(PREFIX)/bin/vscaler
	ln -sf vscaler $(DESTDIR)$(PREFIX)/bin/kubectl-vscaler

.PHONY: bench
## bench: benchmarks next to their peers; writes bench/RESULTS.md
bench: build cluster-build vpa-build
	@bench/run.sh

.PHONY: format format-check
## format: clang-format every C++ file in place
format: deps-test
	@clang-format -i $(SOURCES)
## format-check: fail when a C++ file is not clang-formatted
format-check: deps-test
	@clang-format --dry-run --Werror $(SOURCES)

.PHONY: clean help
clean:
	rm -rf build
## help: this list
help:
	@grep -E '^## ' $(MAKEFILE_LIST) | sed 's/^## /  /'
