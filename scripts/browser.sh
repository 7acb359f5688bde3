#!/usr/bin/env bash
# Renders a page in headless Chromium (Debian's `chromium`, installed by `make deps-test`):
#   scripts/browser.sh screenshot URL OUT.png [WIDTH,HEIGHT]   a PNG of the page
#   scripts/browser.sh dom URL                                 the DOM after rendering, on stdout
# A throwaway profile each run; --no-sandbox because tests and CI run as root. Chromium's own
# noise (D-Bus, GPU) goes to $BROWSER_LOG (default /dev/null).
set -euo pipefail
what=${1:?usage: browser.sh screenshot|dom URL [OUT.png [WIDTH,HEIGHT]]}
url=${2:?a URL}
command -v chromium >/dev/null || { echo "browser.sh: chromium not found (make deps-test)" >&2; exit 1; }
profile=$(mktemp -d /tmp/vscaler-chromium.XXXXXX)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars
  --disable-extensions --user-data-dir="$profile")
case "$what" in
  screenshot)
    out=${3:?an output file}
    mkdir -p "$(dirname "$out")"
    timeout 90 chromium "${flags[@]}" --window-size="${4:-1400,1000}" --screenshot="$(realpath -m "$out")" \
      "$url" >>"${BROWSER_LOG:-/dev/null}" 2>&1
    [ -s "$out" ] || { echo "browser.sh: no screenshot written to $out" >&2; exit 1; }
    ;;
  dom) timeout 90 chromium "${flags[@]}" --dump-dom "$url" 2>>"${BROWSER_LOG:-/dev/null}" ;;
  *) echo "browser.sh: unknown command $what" >&2; exit 2 ;;
esac
