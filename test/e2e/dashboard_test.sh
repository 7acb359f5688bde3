#!/usr/bin/env bash
# The dashboard (/dashboard on its own address, --dashboard-addr) in a real headless browser
# (Debian's chromium):
# the demo's scaler (fixed values) and two scalers whose recommendations are written into status
# by hand (one over-, one under-provisioned), the values beside the recommendation, the signed
# totals per namespace, the Guaranteed and Burstable resources YAML to copy per container, an
# HTML-bearing message shown escaped; a scaler in mode Off shown against its template's requests,
# not the values its status says would be applied; and a screenshot of the namespace, kept in
# build/artifacts/dashboard_test.png (docs/dashboard.png is one).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
artifact=$ROOT/build/artifacts/dashboard_test.png
mkdir -p "$(dirname "$artifact")"
install_crd
flags=()
# Once the recommender runs in the operator: no pass while this test writes status by hand.
"$VSCALER_BIN" --help 2>&1 | grep -q -- --recommender-interval && flags+=(--recommender-interval 1h)
start_operator "${flags[@]}"
base=$DASHBOARD_URL
ns=$(unique_namespace dash)

# The demo's Deployment and scaler (fixed values), in this test's namespace.
sed "s/namespace: shop/namespace: $ns/" "$ROOT/manifests/samples/deployment.yaml" | k apply -f - >/dev/null
sed "s/namespace: shop/namespace: $ns/" "$ROOT/manifests/samples/verticalscaler.yaml" | k apply -f - >/dev/null
make_deployment "$ns" api '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"500m","memory":"512Mi"}}}]'
make_deployment "$ns" db '[{"name":"db","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]'
for name in api db; do
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$name"},
 "spec":{"deploymentName":"$name"}}
JSON
done
# A scaler in mode Off, in a namespace of its own (the totals above stay those of three): its
# status shows what would be applied, so the page shows the template's requests, listed by the
# dashboard's sampler (at the latest one sample period, 30 s, after the scaler appears).
off_ns=$(unique_namespace dash-off)
make_deployment "$off_ns" legacy '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"700m","memory":"256Mi"}}}]'
k -n "$off_ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"legacy"},
 "spec":{"deploymentName":"legacy","updateMode":"Off"}}
JSON
reconciled() { [ "$(jp "$ns" "vsc/$1" '{.status.observedGeneration}')" = 1 ]; }
for name in web api db; do eventually 30 reconciled "$name"; done
expect_eq "web app requests (fixed values applied)" \
  "$(jp "$ns" deploy/web '{.spec.template.spec.containers[0].resources.requests}')" '{"cpu":"250m","memory":"256Mi"}'

# Recommendations as the recommender writes them, beside the template's requests as the reconciler
# reports them; the rate-limit clock set to now, and the bounds around api's request, so no
# recommendation-driven patch changes the templates meanwhile.
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
recommend() { # NAME CONTAINER REQ_CPU REQ_MEM TARGET_CPU TARGET_MEM LOW_CPU LOW_MEM UP_CPU UP_MEM
  local name=$1 container=$2 cpu=$3 memory=$4
  shift 2
  shift 2
  set -- "$name" "$container" "$@"
  k -n "$ns" patch verticalscaler "$1" --subresource=status --type=merge -p "{\"status\":{
    \"containers\":[{\"name\":\"$2\",\"requests\":{\"cpu\":\"$cpu\",\"memory\":\"$memory\"}}],
    \"lastRecommendationUpdateTime\":\"$now\",\"recommendation\":{\"containerRecommendations\":[{
    \"containerName\":\"$2\",\"target\":{\"cpu\":\"$3\",\"memory\":\"$4\"},
    \"lowerBound\":{\"cpu\":\"$5\",\"memory\":\"$6\"},\"upperBound\":{\"cpu\":\"$7\",\"memory\":\"$8\"},
    \"uncappedTarget\":{\"cpu\":\"$3\",\"memory\":\"$4\"}}]}}}" >/dev/null
}
# A condition whose message carries HTML (added beside the reconciler's own conditions).
k -n "$ns" patch verticalscaler api --subresource=status --type=json -p '[{"op":"add","path":"/status/conditions/-","value":
  {"type":"Reviewed","status":"False","reason":"Pending","message":"<b>evil</b> & <i>co</i>","lastTransitionTime":"'"$now"'"}}]' >/dev/null
shown() {
  recommend api app 500m 512Mi 200m 256Mi 150m 200Mi 600m 600Mi
  recommend db db 100m 128Mi 300m 256Mi 250m 200Mi 500m 400Mi
  curl -fsS "$base/dashboard.json?namespace=$ns" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = {x["name"]: x for x in d["namespaces"][0]["scalers"]}
assert s["api"]["containers"][0]["target"] == {"cpu": "200m", "memory": "256Mi"}
assert s["db"]["containers"][0]["target"] == {"cpu": "300m", "memory": "256Mi"}
assert any(c["type"] == "Reviewed" for c in s["api"]["conditions"])'
}
eventually 30 shown
# Off: the recommendation (200m) is what the status's containers show; the template asks 700m.
off_shown() {
  local rec='{"containerName":"app","target":{"cpu":"200m","memory":"128Mi"}}'
  k -n "$off_ns" patch verticalscaler legacy --subresource=status --type=merge -p "{\"status\":{
    \"containers\":[{\"name\":\"app\",\"requests\":{\"cpu\":\"200m\",\"memory\":\"128Mi\"}}],
    \"recommendation\":{\"containerRecommendations\":[$rec]}}}" >/dev/null
  curl -fsS "$base/dashboard.json?namespace=$off_ns" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["namespaces"][0]["scalers"][0]["containers"][0]
assert c["templateKnown"] is True, c
assert c["requests"] == {"cpu": "700m", "memory": "256Mi"}, c
assert c["target"] == {"cpu": "200m", "memory": "128Mi"}, c' 2>/dev/null
}
eventually 60 off_shown
echo "ok: a scaler in Off is shown against its template (700m), not its status (200m)"

dom=$WORK_DIR/dashboard.html  # removed with the operator's work dir at exit
start=$SECONDS
"$ROOT/scripts/browser.sh" dom "$base/dashboard?namespace=$ns" >"$dom" || fail "chromium did not render the page"
echo "ok: chromium rendered the page in $((SECONDS - start))s"
text=$(python3 -c '
import html, re, sys
page = open(sys.argv[1]).read()
page = re.sub(r"<(style|title)\b.*?</\1>", " ", page, flags=re.S)
page = re.sub(r"</?(b|i|span|small)\b[^>]*>", "", page)  # inline: no word break
print(re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page))))' "$dom")
echo "$text" >"${artifact%.png}.txt"
has() { grep -qF -- "$1" <<<"$text" || fail "the page does not show '$1' (its text: ${artifact%.png}.txt)"; echo "ok: shows '$1'"; }
has "Namespace $ns (3 scalers)"
for scaler in web api db; do has "$scaler Auto"; done
has "target Deployment/web"
has "app fixed 250m / 256Mi 1 / 512Mi"                         # requests and limits now
has "app recommended 500m / 512Mi — 200m / 256Mi 150m / 200Mi 600m / 600Mi"
has "db recommended 100m / 128Mi — 300m / 256Mi 250m / 200Mi 500m / 400Mi"
has "savings CPU +300m, memory +256Mi"                        # api: over-provisioned
has "savings CPU -200m, memory -128Mi"                         # db: under-provisioned
has "savings CPU 0, memory 0"                                  # web: fixed values
# The namespace's totals: requested web 260m/272Mi + api 500m/512Mi + db 100m/128Mi; recommended
# web's fixed values, api's and db's targets; savings signed.
has "CPU 860m 760m +100m"
has "Memory 912Mi 784Mi +128Mi"
# The request/limit pairs to copy (Goldilocks' two): api's target, and its bounds.
has "app: Guaranteed (requests = limits = target) resources: requests: cpu: 200m memory: 256Mi limits: cpu: 200m memory: 256Mi"
has "app: Burstable (requests = lowerBound, limits = upperBound) resources: requests: cpu: 150m memory: 200Mi limits: cpu: 600m memory: 600Mi"
has "db: Guaranteed (requests = limits = target) resources: requests: cpu: 300m memory: 256Mi"
has "Reviewed=False Pending: <b>evil</b> & <i>co</i>"            # as text...
grep -qF '&lt;b&gt;evil&lt;/b&gt; &amp; &lt;i&gt;co&lt;/i&gt;' "$dom" || fail "the HTML in the message is not escaped"
grep -qF '<b>evil</b>' "$dom" && fail "the message's HTML became markup"
echo "ok: ...never as markup"

start=$SECONDS
BROWSER_LOG=/dev/null "$ROOT/scripts/browser.sh" screenshot "$base/dashboard?namespace=$ns" "$artifact" 1400,1100 ||
  fail "no screenshot"
[ "$(head -c 8 "$artifact" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$artifact is not a PNG"
echo "ok: screenshot $artifact ($(stat -c %s "$artifact") bytes, $((SECONDS - start))s)"
echo "PASS"
