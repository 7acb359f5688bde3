#!/usr/bin/env bash
# Builds the operator image as an OCI image archive without a container daemon (umoci, from
# Debian): from scratch, one layer holding the binary, exactly the shared libraries `ldd` says it
# loads (and the dynamic loader), an /etc/passwd and /etc/group for the non-root user 65532 and an
# empty /tmp. The configuration runs that user with the Dockerfile's entrypoint and, as default
# arguments, the args of manifests/deployment.yaml, so the image runs the same with or without
# the manifests.
# Usage: scripts/image.sh [BINARY [ARCHIVE]]   (defaults: build/vscaler, build/vscaler-VERSION.oci.tar)
# Load it elsewhere with e.g. `skopeo copy oci-archive:ARCHIVE:VERSION docker://REGISTRY/vscaler:VERSION`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-$root/build/vscaler}
[ -x "$binary" ] || { echo "image.sh: $binary is not an executable (make build first)" >&2; exit 1; }
command -v umoci >/dev/null || { echo "image.sh: umoci is missing (scripts/deps.sh image installs it)" >&2; exit 1; }
version=$("$binary" --version | awk '{print $2}')
[ -n "$version" ] || { echo "image.sh: $binary --version printed no version" >&2; exit 1; }
archive=${2:-$root/build/vscaler-$version.oci.tar}
entrypoint=/usr/local/bin/vscaler
uid=65532

work=$(mktemp -d "${TMPDIR:-/tmp}/vscaler-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
layout=$work/oci
rootless=()
# Without root, umoci maps the caller to uid 0 in the layer (files owned by root, as they must be).
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)

# The binary (stripped: symbols are for the build tree's copy) and what it loads.
install -D -m 0755 "$binary" "$rootfs$entrypoint"
strip --strip-unneeded "$rootfs$entrypoint"
# ldd prints "libx.so => /path (addr)" for libraries and "/lib64/ld-linux-x86-64.so.2 (addr)" for
# the loader; linux-vdso has no file. A library ldd cannot find fails the build here.
if ldd "$binary" | grep -q 'not found'; then
  echo "image.sh: $binary needs libraries that are not installed:" >&2
  ldd "$binary" | grep 'not found' >&2
  exit 1
fi
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u >"$work/libs"
while read -r lib; do
  # The path as the loader asks for it (a symlink such as libssl.so.3 resolved to its file).
  install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
done <"$work/libs"
mkdir -p "$rootfs/etc" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/nonexistent:/sbin/nologin\n' \
  "$uid" "$uid" >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:%s:\n' "$uid" >"$rootfs/etc/group"

# The container's default arguments: the Deployment's args, in order.
mapfile -t args < <(awk '/^ *args:$/ {on = 1; next} on && /^ *- / {sub(/^ *- /, ""); print; next} on {exit}' \
  "$root/manifests/deployment.yaml")
[ ${#args[@]} -gt 0 ] || { echo "image.sh: no args found in manifests/deployment.yaml" >&2; exit 1; }
cmd_flags=()
for arg in "${args[@]}"; do cmd_flags+=(--config.cmd "$arg"); done

umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci insert "${rootless[@]}" --image "$layout:$version" "$rootfs" /
umoci config --image "$layout:$version" --config.user "$uid:$uid" --config.workingdir / \
  --config.entrypoint "$entrypoint" "${cmd_flags[@]}" \
  --config.env PATH=/usr/local/bin \
  --config.label "org.opencontainers.image.title=vscaler" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.exposedports 9443/tcp --config.exposedports 8080/tcp --config.exposedports 8081/tcp
umoci gc --layout "$layout"
mkdir -p "$(dirname "$archive")"
tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner -cf "$archive.tmp" .
mv "$archive.tmp" "$archive"
echo "image.sh: $archive (OCI image archive, tag $version; $(wc -l <"$work/libs") shared libraries, $(du -h "$archive" | cut -f1))"
