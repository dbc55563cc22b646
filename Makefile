# Summa: a segment-based search engine and its Kubernetes operator.

GO ?= go
FUZZTIME ?= 2000x

# The release: its version, and the images it ships (registry-qualified, so
# that config/default, dist/install.yaml and the Helm chart pull on any
# cluster). The operator's default engine image is ENGINE_IMG, stamped into
# its binary by the Dockerfile.
VERSION ?= v0.2.0
IMAGE_REGISTRY ?= ghcr.io/summadev
IMG ?= $(IMAGE_REGISTRY)/summa-operator:$(VERSION)
ENGINE_IMG ?= $(IMAGE_REGISTRY)/summa-server:$(VERSION)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# CONTAINER_TOOL builds and pushes the images (docker, podman or buildah).
CONTAINER_TOOL ?= docker

##@ General

.PHONY: print-%
print-%: ## Print a variable's value (make print-IMG).
	@echo $($*)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build every package and command into bin/.
	$(GO) build ./...
	@mkdir -p bin
	@if [ -d cmd ]; then $(GO) build -o bin/ ./cmd/...; fi

.PHONY: check-tracked-files
check-tracked-files: ## Fail if git tracks an ELF binary or a file over 1 MiB not on hack/tracked-large-files.txt.
	hack/check-tracked-files.sh

.PHONY: vet
vet: ## go vet and gofmt check.
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: test
# make test builds the S3 server (make s3) when it is missing and sets
# SUMMA_REQUIRE_S3=1 for every test it runs (go test and the e2e specs), so
# the backup tests against the real S3 server (black box, engine/s3backup,
# the operator's envtest spec, the e2e backup spec) run and are never
# skipped. -timeout 30m: the operator's envtest package alone takes about 8
# minutes (go test's default bound is 10 per package). Last, the focused
# operator specs on the oldest supported Kubernetes (test-oldest-k8s): its
# kube-apiserver's cold build waits there for CI's background build of it
# (.ci/run), if that is still going, instead of building it twice.
test: check-tracked-files vet envtest helm s3 check-monitoring ## Run every test (unit, rule, crash/fault harness, black-box binary and backups against a real S3 server, envtest operator suite, Helm chart against config/, a short fuzz run, the e2e specs on the local cluster, then the focused operator specs on the oldest supported Kubernetes).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) SUMMA_REQUIRE_ENVTEST=1 HELM=$(HELM) SUMMA_REQUIRE_HELM=1 SUMMA_REQUIRE_S3=1 $(GO) test -count=1 -timeout 30m ./...
	@cat bin/hostile-figures.txt
	$(GO) test -count=1 -race -short ./engine/lifecycle/ ./engine/index/ ./engine/registry/ ./engine/optimizer/
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)
	SUMMA_REQUIRE_S3=1 $(MAKE) e2e
	$(MAKE) test-oldest-k8s

# PROMTOOL lints the alert rules and the metrics (Debian: apt-get install
# prometheus).
PROMTOOL ?= promtool

.PHONY: check-monitoring
check-monitoring: ## promtool: check config/prometheus/summa-rules.yaml and run its unit tests (test/prometheus), and lint the live /metrics of a real summa-server and the operator's metrics exposition.
	@command -v $(PROMTOOL) >/dev/null || { echo "promtool not found: apt-get install prometheus"; exit 1; }
	$(PROMTOOL) check rules config/prometheus/summa-rules.yaml
	$(PROMTOOL) test rules test/prometheus/summa-rules-test.yaml
	@mkdir -p bin
	$(GO) build -o bin/summa-server ./cmd/summa-server
	PROMTOOL=$(PROMTOOL) GO=$(GO) hack/check-metrics.sh bin/summa-server

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME iterations (default 2000x: count-based, since time-based runs can end in a spurious deadline error on Go 1.26).
	@set -e; for pkg in $$($(GO) list ./engine/...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=50x $$pkg; \
	  done; \
	done

# Mutation testing (gremlins, pinned; the binary's name carries the version,
# so a bump installs the new one). MUTATE_SCOPE picks the units (see
# hack/mutate/mutate.sh); MUTATE_WORKERS mutants run at once.
GREMLINS_VERSION ?= v0.6.0
GREMLINS ?= $(CURDIR)/bin/gremlins-$(GREMLINS_VERSION)
MUTATE_SCOPE ?= lifecycle metadata index-commit index-rewrite registry
MUTATE_WORKERS ?= 2

.PHONY: mutate gremlins
gremlins: $(GREMLINS) ## Install gremlins (GREMLINS_VERSION) into bin/.
$(GREMLINS):
	@mkdir -p $(CURDIR)/bin/.gremlins-build
	GOBIN=$(CURDIR)/bin/.gremlins-build $(GO) install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)
	mv $(CURDIR)/bin/.gremlins-build/gremlins $@

mutate: $(GREMLINS) ## Mutation testing of the crash-critical code (lifecycle, metadata, index commit and rewrite paths, registry deletion and drain); prints `mutation score crash-critical: S`. Not part of test (about an hour on 2 cores; MUTATE_SCOPE="lifecycle metadata" takes minutes).
	GO=$(GO) GREMLINS=$(GREMLINS) MUTATE_SCOPE="$(MUTATE_SCOPE)" MUTATE_WORKERS=$(MUTATE_WORKERS) hack/mutate/mutate.sh

# Rule mutations: one realistic, hand-written mutation per rule of
# docs/engine.md (hack/rulemut/mutations_<family>.go), each applied in a scratch
# copy of the tree; the rule's tests must fail on it. RULES=L03,C07 runs a
# subset.
RULES ?=
.PHONY: rule-mutations
rule-mutations: ## Per rule, break the production code the ways a careless change would and check that an assertion of the rule's tests fails; prints the assertion per mutation and `rule mutations killed: K/N`. RULES=L03,C07 a subset (RULES=C04:2 one entry: the rule's second), JOBS=2 two mutants at once. Not part of test.
	GO=$(GO) hack/rulemut/run.sh $(if $(RULES),-only $(RULES)) $(if $(JOBS),-j $(JOBS))

##@ Run

.PHONY: run run-local down
run: ## The whole product here: local cluster, operator from config/, a SummaIndex, sample text ingested (root on Linux; else as run-local).
	hack/run-cluster.sh

run-local: ## Start summa-server alone (no cluster), load sample text, serve until Ctrl-C.
	hack/run-local.sh

down: cluster-down ## Stop what `make run` started and restore the host.

.PHONY: bench bench-quick
# BENCH_FLAGS adds flags, e.g. BENCH_FLAGS="-profile-dir profiles" for CPU
# profiles of every phase (profiles/ is ignored by git). The command installs
# linux-doc-6.1, libxapian-dev and g++ with apt-get when they are missing and
# compiles the Xapian driver into bin/; the large corpus's documentation
# packages (bench/largecorpus.go, docs/performance.md) likewise. Add
# BENCH_FLAGS="-corpora small" or "-corpora large" for one corpus, or
# "-large-docs 50000" for a sample of the large one.
BENCH_FLAGS ?=
bench: ## Engine vs Bleve v2, Xapian 1.4 and Lucene 8.8 on Debian linux-doc (full corpus, 3 reps), then on the large corpus (283k sections of 15 Debian documentation packages) with its " (large)" goal lines and a growth table; TOP_10/TOP_10_COUNT/COUNT modes, BP on a shuffled order; writes docs/performance.md.
	$(GO) run ./bench/cmd/summa-bench -out docs/performance.md $(BENCH_FLAGS)

bench-quick: ## The same on a 5,000-document sample of the small corpus only (a few minutes on an idle machine: 17 min under a load of 40 with Lucene's JIT warm-up); prints only.
	$(GO) run ./bench/cmd/summa-bench -quick $(BENCH_FLAGS)

.PHONY: bench-vectors bench-vectors-quick
bench-vectors: ## Vector indexes (dense binary IVF, Seismic, block-max pruning) on vectors derived from real text, against exact answers in the same run, and the binary IVF against FAISS's IndexBinaryIVF and hnswlib (python3-faiss, python3-hnswlib: installed with apt when missing); prints recall, speedup, latency and recall/QPS curves in the issues' forms.
	$(GO) run ./bench/cmd/bench-vectors

bench-vectors-quick: ## The same on smaller data sets (a few minutes).
	$(GO) run ./bench/cmd/bench-vectors -quick

.PHONY: bench-replication bench-replication-quick
bench-replication: ## Read followers on the real binary: commit-to-visible lag p99, a new follower's catch-up rate on a 1 GiB index beside the disk's sequential write rate measured in the same run, and the searches failed during a rolling restart (2 followers, then the leader).
	$(GO) run ./bench/cmd/bench-replication $(BENCH_REPLICATION_FLAGS)

bench-replication-quick: ## The same on a 128 MiB index and 100 commits.
	$(GO) run ./bench/cmd/bench-replication -index-mb 128 -commits 100 $(BENCH_REPLICATION_FLAGS)

.PHONY: bench-backup bench-backup-quick
bench-backup: s3 ## Online backup to a real S3 server (SeaweedFS on loopback) and restore, on the real binary, with a 512 MiB index: prints backup MB/s, the incremental backup's bytes after a 1% change, and restore MB/s, each beside the disk's sequential write rate measured in the same run.
	$(GO) run ./bench/cmd/bench-backup $(BENCH_BACKUP_FLAGS)

bench-backup-quick: s3 ## The same on a 128 MiB index.
	$(GO) run ./bench/cmd/bench-backup -index-mb 128 $(BENCH_BACKUP_FLAGS)

.PHONY: bench-operator bench-operator-quick
bench-operator: ## One operator (the real binary) with 1,000 SummaIndexes (100 running real engines), 5,000 unrelated pods, on envtest (~10 min on 2 cores); prints RSS, steady API writes, status staleness, time to Ready.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./bench/cmd/bench-operator $(BENCH_OPERATOR_FLAGS)

bench-operator-quick: ## The same with 50 indexes (10 running), 200 pods, a 10 s resync (~3 min).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) run ./bench/cmd/bench-operator -indexes 50 -running 10 -pods 200 -namespaces 5 \
		-resync-period 10s -steady 30s $(BENCH_OPERATOR_FLAGS)

.PHONY: demo
demo: ## Index real text into a temporary directory and query it (no cluster needed).
	$(GO) run ./cmd/summa-demo

# ---------------------------------------------------------------------------
# Operator: API, manifests, envtest. (Section appended by the operator
# foundation; targets above are untouched.)
# ---------------------------------------------------------------------------

##@ Operator

# controller-gen version (sigs.k8s.io/controller-tools), pinned; the binary
# name carries it so that a bump installs the new one.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(CURDIR)/bin/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# Kubernetes release of the envtest control plane; keep it in step with the
# k8s.io/* v0.X.Y libraries in go.mod.
ENVTEST_K8S_VERSION ?= v1.37.2
ENVTEST_ASSETS ?= $(CURDIR)/bin/envtest

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen (CONTROLLER_TOOLS_VERSION) into bin/.
$(CONTROLLER_GEN):
	@mkdir -p $(CURDIR)/bin
	GOBIN=$(CURDIR)/bin $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(CURDIR)/bin/controller-gen $@

.PHONY: manifests
manifests: controller-gen ## Generate the CRD (config/crd/bases, descriptions below spec.podTemplate trimmed by hack/crdtrim) and the operator's ClusterRole (config/rbac/role.yaml); copy both into the Helm chart.
	$(CONTROLLER_GEN) rbac:roleName=summa-operator crd:allowDangerousTypes=true,generateEmbeddedObjectMeta=true paths="./api/..." paths="./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(GO) run ./hack/crdtrim config/crd/bases/summa.dev_summaindexes.yaml
	@$(MAKE) --no-print-directory chart-sync

.PHONY: generate
generate: controller-gen ## Generate the deepcopy code of api/ (zz_generated.deepcopy.go).
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: verify-manifests
verify-manifests: manifests generate ## Regenerate CRD, RBAC, the chart's copies and deepcopy code; fail if config/, api/ or the chart differ from git (CI).
	@git diff --exit-code -- config api $(CHART_DIR) || { echo "config/, api/ or $(CHART_DIR) is out of date: run 'make manifests generate' and commit the result"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- config api $(CHART_DIR)); if [ -n "$$untracked" ]; then \
	  echo "generated files not in git:"; echo "$$untracked"; exit 1; fi

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/envtest (cached; ~7 min cold on 2 idle cores, ~15 s with a warm Go build cache).
	KUBE_VERSION=$(ENVTEST_K8S_VERSION) ENVTEST_DIR=$(ENVTEST_ASSETS) GO=$(GO) hack/envtest/build.sh

# The oldest Kubernetes release the operator supports (docs/install.md, the
# chart's kubeVersion). Its envtest control plane is only its
# kube-apiserver, built the same way into bin/cluster-<version>; etcd and
# kube-controller-manager (its garbage collector only) are the current
# envtest's (hack/envtest/build-oldest.sh). A focused part of the operator
# suite runs on it: the CRD's OpenAPI and CEL validation, the CRD revision
# check, the main reconcile paths (create, status, restarts, suspend,
# doctor, deletion) and the status watch. The full suite runs on
# ENVTEST_K8S_VERSION.
ENVTEST_OLDEST_K8S_VERSION ?= v1.29.15
ENVTEST_OLDEST_ASSETS ?= $(CURDIR)/bin/envtest-$(ENVTEST_OLDEST_K8S_VERSION)
ENVTEST_OLDEST_CLUSTER_DIR ?= $(CURDIR)/bin/cluster-$(ENVTEST_OLDEST_K8S_VERSION)
ENVTEST_OLDEST_FOCUS ?= CRD validation|CRD revision|The SummaIndex reconciler|Status watch

.PHONY: envtest-oldest-apiserver envtest-oldest test-oldest-k8s
envtest-oldest-apiserver: ## Build only the kube-apiserver of ENVTEST_OLDEST_K8S_VERSION into bin/cluster-<version> (cached; the costly part of envtest-oldest).
	KUBE_VERSION=$(ENVTEST_OLDEST_K8S_VERSION) KUBE_BINARIES=kube-apiserver KUBE_BUILD_TAGS=providerless CLUSTER_DIR=$(ENVTEST_OLDEST_CLUSTER_DIR) GO=$(GO) hack/cluster/build.sh

envtest-oldest: envtest ## The envtest control plane of the oldest supported Kubernetes in bin/envtest-<version>: its kube-apiserver, with bin/envtest's etcd and kube-controller-manager (cached; cold: see docs/install.md).
	KUBE_VERSION=$(ENVTEST_OLDEST_K8S_VERSION) ENVTEST_DIR=$(ENVTEST_OLDEST_ASSETS) ENVTEST_SHARE_DIR=$(ENVTEST_ASSETS) \
	  CLUSTER_DIR=$(ENVTEST_OLDEST_CLUSTER_DIR) GO=$(GO) hack/envtest/build-oldest.sh

test-oldest-k8s: envtest-oldest ## Run the CRD validation, CRD revision, main reconcile and status watch specs on the oldest supported Kubernetes (never skipped; the last step of make test).
	KUBEBUILDER_ASSETS=$(ENVTEST_OLDEST_ASSETS) SUMMA_REQUIRE_ENVTEST=1 $(GO) test -count=1 -timeout 30m ./controllers/ -run TestControllers -ginkgo.focus='$(ENVTEST_OLDEST_FOCUS)'

# The S3 server of the backup tests (SeaweedFS's weed, pinned in
# hack/s3/build.sh). The tests find it at bin/s3/weed and skip without it,
# unless SUMMA_REQUIRE_S3=1.
S3_DIR ?= $(CURDIR)/bin/s3

.PHONY: s3
s3: ## Build the S3 server of the backup tests (SeaweedFS's weed) from the Go module proxy into bin/s3 (cached; cold: 16 CPU-minutes, 64 min wall on a busy shared 2-core machine; about 8 min on 2 idle cores).
	S3_DIR=$(S3_DIR) GO=$(GO) hack/s3/build.sh

.PHONY: test-s3
test-s3: s3 ## Run the backup and restore tests against the real S3 server (never skipped).
	SUMMA_REQUIRE_S3=1 $(GO) test -count=1 -run 'S3|B01' ./test/blackbox/ ./engine/s3backup/... ./engine/server/

.PHONY: test-operator
test-operator: envtest ## Run the API and operator tests on a real kube-apiserver and etcd (envtest required, never skipped).
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) SUMMA_REQUIRE_ENVTEST=1 $(GO) test -count=1 ./api/... ./controllers/...

# Local cluster: a real single-node Kubernetes on this machine (root, Linux),
# images built without a registry. See hack/cluster/up.sh and
# hack/cluster/README.md.
CLUSTER_DIR ?= $(CURDIR)/bin/cluster

.PHONY: cluster-build images cluster-up cluster-down
cluster-build: ## Build kube-apiserver, -controller-manager, -scheduler, kubelet, kubectl, kube-proxy, etcd and CoreDNS into bin/cluster (each only when missing; shares the build with envtest).
	KUBE_VERSION=$(ENVTEST_K8S_VERSION) CLUSTER_DIR=$(CLUSTER_DIR) GO=$(GO) hack/cluster/build.sh

images: ## Build the image tarballs (summa-server, summa-operator, pause) into bin/images; import them too when the local cluster runs.
	@if [ -S $(CLUSTER_DIR)/run/containerd/containerd.sock ]; then \
	  $(GO) run ./hack/imagebuild -out bin/images -containerd $(CLUSTER_DIR)/run/containerd/containerd.sock; \
	else \
	  $(GO) run ./hack/imagebuild -out bin/images; \
	fi

cluster-up: ## Start the local single-node cluster (root; idempotent); prints the KUBECONFIG to export.
	KUBE_VERSION=$(ENVTEST_K8S_VERSION) CLUSTER_DIR=$(CLUSTER_DIR) GO=$(GO) hack/cluster/up.sh

cluster-down: ## Stop the local cluster and restore the host (idempotent).
	CLUSTER_DIR=$(CLUSTER_DIR) hack/cluster/down.sh

.PHONY: e2e
e2e: ## End-to-end specs (test/e2e) on the local cluster (brought up, and down again, if not running); figures in bin/e2e-figures.txt.
	CLUSTER_DIR=$(CLUSTER_DIR) GO=$(GO) hack/e2e.sh

.PHONY: e2e-kind
e2e-kind: ## The same e2e specs on a kind cluster (needs Docker and kind; not run on machines without them).
	GO=$(GO) hack/e2e-kind.sh

##@ Build and release

# Platforms of docker-buildx.
PLATFORMS ?= linux/arm64,linux/amd64
# The Dockerfile's build arguments: version, commit and the engine image the
# operator defaults to.
DOCKER_BUILD_ARGS ?= --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg ENGINE_IMAGE=$(ENGINE_IMG)

.PHONY: docker-build docker-push docker-buildx docker-build-local
docker-build: ## Build the operator (IMG) and engine (ENGINE_IMG) images from the Dockerfile with CONTAINER_TOOL.
	$(CONTAINER_TOOL) build $(DOCKER_BUILD_ARGS) --target operator -t $(IMG) .
	$(CONTAINER_TOOL) build $(DOCKER_BUILD_ARGS) --target engine -t $(ENGINE_IMG) .

docker-push: ## Push IMG and ENGINE_IMG.
	$(CONTAINER_TOOL) push $(IMG)
	$(CONTAINER_TOOL) push $(ENGINE_IMG)

docker-buildx: ## Build and push both images for PLATFORMS with docker buildx (cross-compiled: the builder runs on the build platform).
	- $(CONTAINER_TOOL) buildx create --name summa-builder
	$(CONTAINER_TOOL) buildx use summa-builder
	$(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) $(DOCKER_BUILD_ARGS) --target operator -t $(IMG) .
	$(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) $(DOCKER_BUILD_ARGS) --target engine -t $(ENGINE_IMG) .
	- $(CONTAINER_TOOL) buildx rm summa-builder

docker-build-local: ## Build both images from the Dockerfile here (buildah, base images made from this machine), as tarballs in bin/images/dockerfile; import them when the local cluster runs.
	VERSION=$(VERSION) COMMIT=$(COMMIT) IMG=$(IMG) ENGINE_IMG=$(ENGINE_IMG) GO=$(GO) \
	  CONTAINERD_SOCK=$(CLUSTER_DIR)/run/containerd/containerd.sock hack/dockerbuild.sh

##@ Deployment

# KUSTOMIZE builds a kustomization with the images pinned (hack/kustomize:
# kustomize's Go API; no binary to install, no committed file edited).
KUSTOMIZE ?= $(GO) run ./hack/kustomize
# The operator image's name as config/manager spells it, replaced by IMG.
CONFIG_IMG_NAME = ghcr.io/summadev/summa-operator
# KUBECTL is the kubectl on PATH, else the local cluster's.
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || echo $(CLUSTER_DIR)/kubectl)
ignore-not-found ?= true

.PHONY: build-installer install uninstall deploy undeploy
build-installer: ## Write dist/install.yaml: CRD, namespace, RBAC and the operator Deployment with IMG and ENGINE_IMG pinned.
	@mkdir -p dist
	$(KUSTOMIZE) -image $(CONFIG_IMG_NAME)=$(IMG) -engine-image $(ENGINE_IMG) config/default > dist/install.yaml.tmp
	@mv dist/install.yaml.tmp dist/install.yaml
	@echo "wrote dist/install.yaml ($(IMG), engine $(ENGINE_IMG))"

install: ## Install the CRD into the cluster of the current kubeconfig.
	$(KUSTOMIZE) config/crd | $(KUBECTL) apply --server-side -f -

uninstall: ## Remove the CRD (and with it every SummaIndex: their volumes follow each one's reclaimPolicy only while the operator runs).
	$(KUSTOMIZE) config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

deploy: ## Deploy the operator (config/default, IMG and ENGINE_IMG pinned) to the cluster of the current kubeconfig.
	$(KUSTOMIZE) -image $(CONFIG_IMG_NAME)=$(IMG) -engine-image $(ENGINE_IMG) config/default | $(KUBECTL) apply --server-side -f -

undeploy: ## Remove what deploy created (SummaIndexes first, so the operator still runs their deletion).
	-$(KUBECTL) delete summaindexes --all --all-namespaces --wait=true --timeout=10m
	$(KUSTOMIZE) -image $(CONFIG_IMG_NAME)=$(IMG) -engine-image $(ENGINE_IMG) config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Helm chart

CHART_DIR = charts/summa-operator
# Helm, built from its Go module into bin/ (like controller-gen); the
# binary's name carries the version so that a bump builds the new one.
HELM_VERSION ?= v4.3.2
HELM ?= $(CURDIR)/bin/helm-$(HELM_VERSION)
# The RBAC files of config/rbac whose rules the chart's templates use.
CHART_RBAC = role.yaml leader_election_role.yaml summaindex_editor_role.yaml summaindex_viewer_role.yaml metrics_reader_role.yaml

.PHONY: helm chart-sync helm-lint helm-package
helm: $(HELM) ## Build helm (HELM_VERSION) from its Go module into bin/ (cached; a few minutes cold).
$(HELM):
	@mkdir -p $(CURDIR)/bin/.helm-build
	GOBIN=$(CURDIR)/bin/.helm-build $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(CURDIR)/bin/.helm-build/helm $@

chart-sync: ## Copy the CRDs (config/crd/bases, into files/crds: templates/crds.yaml renders them so helm upgrade updates them), the RBAC rules (config/rbac), the alert rules and the dashboard into the chart, and write config/prometheus/rules.yaml from summa-rules.yaml (run by manifests; never edit the copies).
	@mkdir -p $(CHART_DIR)/files/crds $(CHART_DIR)/files/rbac $(CHART_DIR)/files/monitoring
	@rm -f $(CHART_DIR)/files/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART_DIR)/files/crds/
	cd config/rbac && cp $(CHART_RBAC) $(CURDIR)/$(CHART_DIR)/files/rbac/
	cp config/prometheus/summa-rules.yaml config/grafana/summa-dashboard.json $(CHART_DIR)/files/monitoring/
	@{ printf '%s\n' '# Generated by make chart-sync from summa-rules.yaml (edit that file):' \
	    '# the same rule groups as a prometheus-operator PrometheusRule.' \
	    'apiVersion: monitoring.coreos.com/v1' 'kind: PrometheusRule' 'metadata:' '  name: summa' \
	    '  namespace: summa-system' '  labels:' '    app.kubernetes.io/name: summa-operator' \
	    '    app.kubernetes.io/managed-by: kustomize' 'spec:'; \
	  sed -n '/^groups:/,$$p' config/prometheus/summa-rules.yaml | sed 's/^/  /'; } > config/prometheus/rules.yaml

helm-lint: helm ## helm lint the chart (strict).
	$(HELM) lint --strict $(CHART_DIR)

helm-package: helm ## Package the chart for VERSION into dist/ (chart version VERSION without the v, appVersion VERSION).
	@mkdir -p dist
	$(HELM) package $(CHART_DIR) --version $(VERSION:v%=%) --app-version $(VERSION) -d dist

##@ kubectl plugin

.PHONY: plugin plugin-archives
plugin: ## Build the kubectl summa plugin into bin/kubectl-summa (put bin/ on PATH: kubectl summa --help).
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/kubectl-summa ./cmd/kubectl-summa

plugin-archives: ## Cross-build the plugin archives of plugins/krew/summa.yaml (kubectl-summa and LICENSE) into dist/ and print their sha256.
	GO=$(GO) hack/plugin-archives.sh
