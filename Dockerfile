# The Summa images: one per binary, from one build.
#
#   docker build --target engine   -t ghcr.io/summadev/summa-server:v0.2.0   .
#   docker build --target operator -t ghcr.io/summadev/summa-operator:v0.2.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 --target operator ...
#
# `make docker-build` runs both with the version stamped; `make
# docker-build-local` builds them here with buildah and base images made from
# this machine (hack/dockerbuild.sh). Two images rather than one because the
# engine runs in every SummaIndex pod and the operator in one Deployment:
# each image holds only its own binary, is scanned and upgraded on its own,
# and a CVE in one binary's dependencies (client-go in the operator) does not
# touch the other.

# GO_IMAGE is the builder: any image with the Go of go.mod, a shell and, for
# `go mod download`, access to a Go module proxy (GOPROXY).
ARG GO_IMAGE=golang:1.26
# BASE_IMAGE is the runtime: static binaries need no libc; nonroot (65532).
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

# The builder runs on the build machine's platform and cross-compiles for the
# target one (BuildKit sets BUILDPLATFORM, TARGETOS and TARGETARCH).
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH
# GOPROXY and GOSUMDB, when given, choose where modules come from (a local
# build points GOPROXY at a module cache); unset, the Go image's defaults.
ARG GOPROXY
ARG GOSUMDB
WORKDIR /workspace
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY client/ client/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY engine/ engine/
COPY internal/ internal/

# VERSION and COMMIT are stamped into both binaries; ENGINE_IMAGE is the
# operator's default engine image (the engine of the same release).
ARG VERSION=dev
ARG COMMIT=unknown
ARG ENGINE_IMAGE=ghcr.io/summadev/summa-server:${VERSION}
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS="${TARGETOS:-$(go env GOHOSTOS)}" GOARCH="${TARGETARCH:-$(go env GOHOSTARCH)}" CGO_ENABLED=0 \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.defaultEngineImage=${ENGINE_IMAGE}" \
      -o /out/ ./cmd/summa-server ./cmd/manager

# The runtime both images start from: the labels they share, with VERSION
# and COMMIT stamped in.
FROM ${BASE_IMAGE} AS runtime
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.source="https://github.com/summadev/summa" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"

# The engine: summa-server, with no default arguments (the operator gives
# them: --data-dir /data --listen 0.0.0.0:8082 and the access flags).
FROM runtime AS engine
LABEL org.opencontainers.image.title="summa-server" \
      org.opencontainers.image.description="Summa search engine"
COPY --from=builder /out/summa-server /usr/local/bin/summa-server
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/summa-server"]

# The operator: the SummaIndex controller (cmd/manager).
FROM runtime AS operator
LABEL org.opencontainers.image.title="summa-operator" \
      org.opencontainers.image.description="Kubernetes operator for SummaIndex resources"
WORKDIR /
COPY --from=builder /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
