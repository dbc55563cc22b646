#!/usr/bin/env bash
# make docker-build-local: builds the root Dockerfile here, with no Docker
# engine and no registry, and writes the two images as tarballs (importing
# them into the local cluster's containerd when it runs).
#
# The Dockerfile's default base images (golang, distroless) cannot be pulled
# on this project's machines, so this script makes stand-ins from the
# machine itself and passes them as the Dockerfile's build arguments:
#
#   GO_IMAGE    localhost/summa-build/golang:<go version>: scratch plus this
#               machine's Go (/usr/local/go), a static busybox for the RUN
#               steps' shell, CA certificates; GOPATH=/go like the official
#               image
#   BASE_IMAGE  localhost/summa-build/static:nonroot: scratch plus
#               /etc/passwd and /etc/group naming root and nonroot (65532),
#               /tmp (1777), /home/nonroot, CA certificates; user 65532,
#               the same layout as gcr.io/distroless/static:nonroot
#
# Modules come from this machine's module cache (the Dockerfile's `go mod
# download` sees GOPROXY=file:///goproxy, the cache mounted read-only),
# falling back to the machine's GOPROXY for anything missing, and the
# Dockerfile's cache mounts are this machine's Go caches (share_caches).
# Then:
#
#   buildah bud --target engine   -> ENGINE_IMG -> OUT_DIR/summa-server.tar
#   buildah bud --target operator -> IMG        -> OUT_DIR/summa-operator.tar
#
# (docker-archive format: `ctr images import` and `kind load image-archive`
# read it), and, if CONTAINERD_SOCK names a live socket, imports both into
# its k8s.io namespace. buildah, with its storage in BUILDAH_DIR, builds as
# root with chroot isolation; it is installed from Debian when missing.
#
# Environment:
#   IMG, ENGINE_IMG   image references (default ghcr.io/summadev/summa-operator:$VERSION, .../summa-server:$VERSION)
#   VERSION, COMMIT   stamped into the binaries and the OCI labels
#   OUT_DIR           tarball directory (default bin/images/dockerfile)
#   BUILDAH_DIR       buildah's storage, layer cache and build caches (default bin/.buildah: a dot keeps the Go tool from walking its module cache)
#   STORAGE_DRIVER    overlay or vfs (default: overlay when it works here, else vfs)
#   CONTAINERD_SOCK   containerd socket to import into (default: the local cluster's, when it runs)
#   GO                go command (default go)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
VERSION="${VERSION:-dev}"
COMMIT="${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
IMG="${IMG:-ghcr.io/summadev/summa-operator:$VERSION}"
ENGINE_IMG="${ENGINE_IMG:-ghcr.io/summadev/summa-server:$VERSION}"
OUT_DIR="${OUT_DIR:-$root/bin/images/dockerfile}"
BUILDAH_DIR="${BUILDAH_DIR:-$root/bin/.buildah}"
CONTAINERD_SOCK="${CONTAINERD_SOCK:-$root/bin/cluster/run/containerd/containerd.sock}"

log() { printf 'dockerbuild: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

[ "$(uname -s)" = Linux ] && [ "$(id -u)" = 0 ] || die "buildah builds here as root on Linux"

# ensure_tools installs buildah and a static busybox from Debian when
# missing.
ensure_tools() {
	local need=()
	command -v buildah >/dev/null || need+=(buildah)
	# The builder's shell must run without the host's libc.
	case "$(ldd /bin/busybox 2>&1 || true)" in
	*"not a dynamic"*) ;;
	*) need+=(busybox-static) ;;
	esac
	[ ${#need[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null || die "missing ${need[*]}, and no apt-get to install them"
	log "installing ${need[*]} from Debian"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# bah runs buildah on the private storage.
bah() {
	TMPDIR="$BUILDAH_DIR/tmp" buildah --root "$BUILDAH_DIR/$STORAGE_DRIVER/root" \
		--runroot "$BUILDAH_DIR/$STORAGE_DRIVER/run" --storage-driver "$STORAGE_DRIVER" "$@"
}

# pick_driver sets STORAGE_DRIVER: overlay when a container can be made and
# mounted with it, else vfs (slower, every layer a full copy).
pick_driver() {
	if [ -n "${STORAGE_DRIVER:-}" ]; then
		return 0
	fi
	STORAGE_DRIVER=overlay
	local c
	if c="$(bah from scratch 2>/dev/null)" && bah mount "$c" >/dev/null 2>&1; then
		bah rm "$c" >/dev/null
		return 0
	fi
	[ -n "${c:-}" ] && bah rm "$c" >/dev/null 2>&1 || true
	log "overlay storage does not work here; using vfs"
	STORAGE_DRIVER=vfs
}

# have_image REF reports whether the image exists in the private storage.
have_image() { bah inspect --type image "$1" >/dev/null 2>&1; }

# passwd_files DIR writes /etc/passwd and /etc/group with root and nonroot
# (65532), as distroless has them.
passwd_files() {
	local d="$1"
	mkdir -p "$d/etc" "$d/root" "$d/home/nonroot" "$d/tmp"
	chmod 1777 "$d/tmp"
	chmod 0700 "$d/root"
	chown 65532:65532 "$d/home/nonroot"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$d/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$d/etc/group"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		mkdir -p "$d/etc/ssl/certs"
		cp /etc/ssl/certs/ca-certificates.crt "$d/etc/ssl/certs/"
	fi
}

# make_builder REF makes the Go builder image from this machine's Go.
make_builder() {
	local ref="$1" goroot c mnt
	goroot="$("$GO" env GOROOT)"
	c="$(bah from scratch)"
	mnt="$(bah mount "$c")"
	passwd_files "$mnt"
	mkdir -p "$mnt/bin" "$mnt/usr/local" "$mnt/go/bin" "$mnt/go/pkg" "$mnt/workspace"
	cp /bin/busybox "$mnt/bin/busybox"
	local applet
	for applet in $("$mnt/bin/busybox" --list); do
		[ -e "$mnt/bin/$applet" ] || ln -s busybox "$mnt/bin/$applet"
	done
	# GOROOT without its own test suite; everything the compiler reads.
	tar -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" -cf - "$(basename "$goroot")" |
		tar -C "$mnt/usr/local" -xf -
	[ "$(basename "$goroot")" = go ] || mv "$mnt/usr/local/$(basename "$goroot")" "$mnt/usr/local/go"
	bah umount "$c" >/dev/null
	bah config --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--env GOPATH=/go --env GOTOOLCHAIN=local --env "GOLANG_VERSION=$("$GO" env GOVERSION | sed 's/^go//')" \
		--workingdir /go --cmd /bin/sh \
		--label "org.opencontainers.image.description=Go builder made from this machine's toolchain (hack/dockerbuild.sh)" "$c"
	bah commit --quiet --rm "$c" "$ref" >/dev/null
}

# make_base REF makes the static non-root runtime base.
make_base() {
	local ref="$1" c mnt
	c="$(bah from scratch)"
	mnt="$(bah mount "$c")"
	passwd_files "$mnt"
	bah umount "$c" >/dev/null
	bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--user 65532:65532 --workingdir /home/nonroot \
		--label "org.opencontainers.image.description=scratch with a nonroot user (hack/dockerbuild.sh), as distroless/static:nonroot" "$c"
	bah commit --quiet --rm "$c" "$ref" >/dev/null
}

# share_caches points the Dockerfile's cache mounts (/root/.cache/go-build
# and /go/pkg/mod, which buildah keeps under $TMPDIR/buildah-cache/<target>)
# at this machine's Go build and module caches, so that the builder
# compiles only what the machine has not compiled already: with -trimpath
# and CGO_ENABLED=0 the compile actions are the same inside and outside, and
# Go's caches are content-addressed and safe to share. Where buildah keeps
# its cache mounts elsewhere, the build is only slower.
share_caches() {
	local cache="$BUILDAH_DIR/tmp/buildah-cache" gocache gomodcache
	gocache="$("$GO" env GOCACHE)"
	gomodcache="$("$GO" env GOMODCACHE)"
	mkdir -p "$cache/root/.cache" "$cache/go/pkg" "$gocache" "$gomodcache"
	[ -e "$cache/root/.cache/go-build" ] || ln -s "$gocache" "$cache/root/.cache/go-build"
	[ -e "$cache/go/pkg/mod" ] || ln -s "$gomodcache" "$cache/go/pkg/mod"
}

# build TARGET REF builds one target of the Dockerfile as REF.
build() {
	local target="$1" ref="$2" modcache proxy
	modcache="$("$GO" env GOMODCACHE)/cache/download"
	mkdir -p "$modcache"
	proxy="file:///goproxy"
	if [ "$("$GO" env GOPROXY)" != off ]; then
		proxy="$proxy,$("$GO" env GOPROXY)"
	fi
	bah bud --isolation chroot --layers --quiet -f Dockerfile --target "$target" \
		--build-arg "GO_IMAGE=$go_image" --build-arg "BASE_IMAGE=$base_image" \
		--build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" --build-arg "ENGINE_IMAGE=$ENGINE_IMG" \
		--build-arg TARGETOS=linux --build-arg "TARGETARCH=$("$GO" env GOARCH)" \
		--build-arg "GOPROXY=$proxy" --build-arg "GOSUMDB=$("$GO" env GOSUMDB)" \
		-v "$modcache:/goproxy:ro" -t "$ref" . >/dev/null
}

# export_image REF FILE writes the image as a docker-archive tarball.
export_image() {
	local ref="$1" file="$2"
	rm -f "$file.tmp"
	bah push --quiet "$ref" "docker-archive:$file.tmp:$ref"
	mv "$file.tmp" "$file"
}

main() {
	local start t
	start=$(date +%s)
	ensure_tools
	mkdir -p "$BUILDAH_DIR/tmp" "$OUT_DIR"
	pick_driver
	share_caches
	go_image="localhost/summa-build/golang:$("$GO" env GOVERSION | sed 's/^go//')"
	base_image="localhost/summa-build/static:nonroot"
	if ! have_image "$go_image"; then
		t=$(date +%s)
		make_builder "$go_image"
		log "made $go_image in $(($(date +%s) - t))s"
	fi
	if ! have_image "$base_image"; then
		make_base "$base_image"
		log "made $base_image"
	fi
	local target ref file
	for target in engine operator; do
		case "$target" in
		engine) ref="$ENGINE_IMG" file="$OUT_DIR/summa-server.tar" ;;
		operator) ref="$IMG" file="$OUT_DIR/summa-operator.tar" ;;
		esac
		t=$(date +%s)
		build "$target" "$ref"
		export_image "$ref" "$file"
		log "$ref (--target $target) built in $(($(date +%s) - t))s: $file, $(du -h "$file" | cut -f1)"
		if [ -S "$CONTAINERD_SOCK" ] && ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; then
			ctr --address "$CONTAINERD_SOCK" --namespace k8s.io images import "$file" >/dev/null
			log "imported $ref into $CONTAINERD_SOCK"
		fi
	done
	log "done in $(($(date +%s) - start))s ($STORAGE_DRIVER storage in $BUILDAH_DIR)"
}

main "$@"
