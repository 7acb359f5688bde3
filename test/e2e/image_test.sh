#!/usr/bin/env bash
# make image (scripts/image.sh): the OCI archive unpacks with umoci into a root filesystem that
# holds only the binary, the shared libraries ldd lists for it, the loader, /etc/passwd, /etc/group
# and /tmp; its configuration runs uid 65532 with the Dockerfile's entrypoint and the manifests'
# args; and the binary runs inside it (chroot, as that user) with --help and --version, and
# against the test cluster until /readyz answers. chroot needs root (or an unprivileged user
# namespace: unshare -r).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${VSCALER_BIN:?run through test/run.sh (VSCALER_BIN unset)}"
work=$(mktemp -d /tmp/vscaler-image-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v umoci >/dev/null || fail "umoci is missing (scripts/deps.sh test installs it)"

"$ROOT/scripts/image.sh" "$VSCALER_BIN" "$work/vscaler.oci.tar" >"$work/build.log" 2>&1 ||
  fail "scripts/image.sh failed: $(cat "$work/build.log")"
version=$("$VSCALER_BIN" --version | awk '{print $2}')
mkdir "$work/layout"
tar -C "$work/layout" -xf "$work/vscaler.oci.tar"
expect_eq "image tag" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])' "$work/layout/index.json")" "$version"
rootless=()
[ "$(id -u)" -eq 0 ] || rootless=(--rootless)
umoci unpack "${rootless[@]}" --image "$work/layout:$version" "$work/bundle" >/dev/null ||
  fail "umoci unpack failed"
rootfs=$work/bundle/rootfs

echo "--- the configuration"
python3 - "$work/bundle/config.json" "$ROOT/manifests/deployment.yaml" <<'PY' || fail "image configuration (above)"
import json, re, sys
process = json.load(open(sys.argv[1]))["process"]
text = open(sys.argv[2]).read()
block = re.search(r"^( *)args:\n((?:\1- .*\n)+)", text, re.M)
want_args = [line.strip()[2:] for line in block.group(2).splitlines()]
failed = []
def check(what, got, want):
    if got != want:
        failed.append(f"{what}: got {got!r}, want {want!r}")
    else:
        print(f"ok: {what} = {want!r}")
check("user", (process["user"]["uid"], process["user"]["gid"]), (65532, 65532))
check("entrypoint and args", process["args"], ["/usr/local/bin/vscaler"] + want_args)
check("--leader-elect among the args", "--leader-elect" in want_args, True)
for f in failed:
    print("FAIL: " + f, file=sys.stderr)
sys.exit(1 if failed else 0)
PY

echo "--- the root filesystem holds the binary and exactly what it loads"
ldd "$VSCALER_BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u >"$work/want"
(cd "$rootfs" && find . -type f | sed 's|^\.||' | sort) >"$work/files"
grep -v -e '^/usr/local/bin/vscaler$' -e '^/etc/passwd$' -e '^/etc/group$' "$work/files" >"$work/libs"
diff "$work/want" "$work/libs" >"$work/libs.diff" ||
  fail "files beyond the binary differ from its ldd list:$(printf '\n')$(cat "$work/libs.diff")"
echo "ok: $(wc -l <"$work/libs") shared libraries, as ldd lists them; files: $(wc -l <"$work/files")"
expect_eq "nonroot user" "$(grep ':65532:' "$rootfs/etc/passwd" | cut -d: -f1)" nonroot
expect_eq "/tmp mode" "$(stat -c %a "$rootfs/tmp")" 1777

echo "--- the binary runs inside it"
# in_root COMMAND...: runs COMMAND in the image's root filesystem, as uid 65532 where we can
# (both chroot and unshare exec it, so a background in_root's $! is the command itself).
in_root=(chroot --userspec=65532:65532 "$rootfs")
[ "$(id -u)" -eq 0 ] || in_root=(unshare -r chroot "$rootfs")
in_root() { "${in_root[@]}" "$@"; }
in_root /usr/local/bin/vscaler --help >"$work/help.txt" 2>&1 || fail "vscaler --help in the image failed: $(cat "$work/help.txt")"
grep -q '^Usage: vscaler \[flags\]' "$work/help.txt" || fail "unexpected --help output: $(head -5 "$work/help.txt")"
grep -q -- '--leader-elect' "$work/help.txt" || fail "--help does not mention --leader-elect"
expect_eq "vscaler --version in the image" "$(in_root /usr/local/bin/vscaler --version)" "vscaler $version"
expect_eq "a flag error in the image" "$(in_root /usr/local/bin/vscaler --bogus 2>&1; echo "exit $?")" \
  "vscaler: unknown flag \"--bogus\" (see --help)
exit 2"

echo "--- inside the image it serves: TLS to the API server, informer synced, /readyz"
install_crd
mkdir -p "$rootfs/tmp/certs"
k config view --raw --flatten >"$rootfs/tmp/kubeconfig"
self_signed_certs "$rootfs/tmp/certs"
chmod -R a+rX "$rootfs/tmp/kubeconfig" "$rootfs/tmp/certs"
health_port=$(free_port)
"${in_root[@]}" /usr/local/bin/vscaler --kubeconfig /tmp/kubeconfig --cert-dir /tmp/certs \
  --webhook-port "$(free_port)" --metrics-addr "127.0.0.1:$(free_port)" \
  --health-addr "127.0.0.1:$health_port" --dashboard-addr "" --namespace image-test-none >"$work/run.log" 2>&1 &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
ready() { curl -fsS "http://127.0.0.1:$health_port/readyz" >/dev/null 2>&1; }
eventually 30 ready || fail "vscaler in the image did not become ready: $(tail -5 "$work/run.log")"
if [ "$(id -u)" -eq 0 ]; then expect_eq "the process's uid" "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")" 65532; fi
kill -TERM "$pid"
wait "$pid" || fail "vscaler in the image exited with $? on SIGTERM: $(tail -5 "$work/run.log")"
echo "ok: vscaler ran from the image as uid 65532, became ready and stopped cleanly on SIGTERM"
echo "PASS image_test"
