#!/usr/bin/env bash
# certs/rotate.sh serving, then certs/rotate.sh ca, against the REAL operator ($VSCALER_BIN run by
# start_operator, registered with certs/install.sh --local), under load all the way:
#   - straight to its webhook, bench/tools/admission_load at 500 reviews/s: a recorded 22 KB
#     Deployment UPDATE review (dry-run, naming a Deployment a scaler targets: the whole hook runs,
#     nothing is enqueued), 4 connections, each reconnecting every 25 requests (a full handshake:
#     new serving certificates are seen) and trusting the CA files in the directory at that moment
#     (ca.crt, ca-next.crt, ca-old.crt: what the published caBundle holds during a CA rotation);
#   - through the API server (rotation_lib.sh's clients, curl in a loop):
#       edits: PATCHes of a Deployment's pod template that also reset a resource its Auto-mode
#              scaler declares (a Helm-style reset): the hook puts the value back and warns;
#       creates: server-side dry-run Deployment CREATEs (the mutating hook patches and warns);
#       scalers: server-side dry-run VerticalScaler CREATEs (the validating hook, failurePolicy
#              Fail, warns from memory that the scaler "load" already targets the Deployment).
# Passes when no request failed (direct: connection, TLS verification, HTTP status or uid;
# through the API server: status or the hook's warning missing), the operator's
# vscaler_webhook_enqueued_total rose by the number of UPDATE reviews the API server sent its
# Deployment hook, at least one per edit (every edit reached the hook and hinted a reconcile; the
# direct and dry-run reviews enqueue nothing; DELETEs of earlier tests' teardown may add a few),
# reconciles ran, the
# edited Deployment carries the declared resources, the direct load saw the old and the new
# serving certificates, and the operator serves a certificate of the new CA, alone in caBundle.
# About a minute; certs_rotate_test.sh covers the same rotations with a stand-in webhook and the
# Secret target.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/rotation_lib.sh"
root=$(cd "$here/../.." && pwd)
export KUBECTL

# The load generator, from the release build (make build) unless given.
build_dir=${VSCALER_BUILD_DIR:-build/release}
[[ $build_dir = /* ]] || build_dir=$root/$build_dir
loadgen=${VSCALER_ADMISSION_LOAD:-$build_dir/bench/tools/admission_load}
if [ ! -x "$loadgen" ] && [ -f "$build_dir/build.ninja" ]; then
  cmake --build "$build_dir" --target admission_load >/dev/null || fail "cannot build $loadgen"
fi
[ -x "$loadgen" ] || fail "$loadgen is missing (make build, or set VSCALER_ADMISSION_LOAD)"
rate=500

work=$(mktemp -d /tmp/vscaler-rotation-test.XXXXXX)
WORK_DIR=$work # start_operator's directory (its log); stop_operator removes it
pids=()
cleanup() {
  local status=$? pid
  touch "$work/stop"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rotation_delete_webhooks
  [ -z "${ns:-}" ] || k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  if [ "$status" != 0 ]; then
    echo "--- the operator's log (last lines):" >&2
    tail -n 20 "$work/operator.log" >&2 2>/dev/null || true
    echo "--- the load generator's errors:" >&2
    cat "$work/loadgen.err" >&2 2>/dev/null || true
  fi
  [ -z "${KEEP_LOGS:-}" ] || echo "logs kept in $work"
  stop_operator
}
trap cleanup EXIT

install_crd
ns=$(unique_namespace rotation)
declared='[{"name":"app","requests":{"cpu":"200m","memory":"96Mi"},"limits":{"cpu":"1","memory":"256Mi"}}]'
make_deployment "$ns" edited \
  '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"50m"}}}]'
make_scaler "$ns" edited edited Auto "$declared"
# for the dry-run creates of Deployment "load", and of scalers that target it too
make_scaler "$ns" load load Auto "$declared"

echo "--- certificates and webhooks (certs/install.sh --local), then the operator"
CERT_DIR=$work/certs
WEBHOOK_PORT=$(free_port)
"$root/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" 2>/dev/null ||
  fail "certs/install.sh --local failed"
start_operator --resync-period 10m
trap cleanup EXIT # start_operator set its own
declared_cpu() {
  [ "$(jp "$ns" deployment/edited '{.spec.template.spec.containers[0].resources.requests.cpu}')" = 200m ]
}
eventually 60 declared_cpu
echo "ok: the operator applied the scaler (requests.cpu 50m -> 200m)"

# The direct load's review: the recorded 20 KB UPDATE, renamed to the edited Deployment, dry-run.
python3 - "$root/test/data/admission/deployment-update-20k.json" "$ns" >"$work/review.json" <<'PY'
import json, sys
review = json.load(open(sys.argv[1]))
request = review["request"]
request["namespace"], request["name"], request["dryRun"] = sys.argv[2], "edited", True
for key in ("object", "oldObject"):
    request[key]["metadata"]["namespace"], request[key]["metadata"]["name"] = sys.argv[2], "edited"
json.dump(review, sys.stdout)
PY

rotation_credentials
cat >"$work/deployment.json" <<'EOF'
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "load"},
 "spec": {"selector": {"matchLabels": {"app": "load"}},
  "template": {"metadata": {"labels": {"app": "load"}},
   "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "10m"}}}]}}}}
EOF
cat >"$work/scaler.json" <<'EOF'
{"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler", "metadata": {"name": "probe"},
 "spec": {"deploymentName": "load", "containers": [{"name": "app", "requests": {"cpu": "100m"}}]}}
EOF
# rotation_client NAME ITERATION: one request of a load client (see rotation_start_load).
rotation_client() {
  case "$1" in
    edit)
      printf '{"spec":{"template":{"metadata":{"annotations":{"edit":"%s"}},"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"%sm"}}}]}}}}' \
        "$2" $((50 + $2 % 50)) >"$work/edit.json"
      rotation_request edit PATCH "/apis/apps/v1/namespaces/$ns/deployments/edited" "$work/edit.json" \
        application/strategic-merge-patch+json 200 "VerticalScaler edited overrides app requests.cpu"
      ;;
    create)
      rotation_request create POST "/apis/apps/v1/namespaces/$ns/deployments?dryRun=All" \
        "$work/deployment.json" application/json 201 "VerticalScaler load overrides app requests.cpu"
      ;;
    scaler)
      rotation_request scaler POST "/apis/scaling.vscaler.dev/v1beta1/namespaces/$ns/verticalscalers?dryRun=All" \
        "$work/scaler.json" application/json 201 "VerticalScaler load already targets Deployment load"
      ;;
  esac
}

# hook_reviews OPERATION: the reviews of that operation the API server has sent vscaler's
# Deployment hook (answered or not). One edit can be reviewed more than once: a PATCH that meets a
# conflict (a status write of the Deployment controller in between) is retried inside the API
# server, admission included, and each review hints. DELETEs hint too: the namespaces of earlier
# tests may be torn down during the load, their scalers still known.
hook_reviews() {
  k get --raw /metrics | awk -v op="operation=\"$1\"" 'index($0, "apiserver_admission_webhook_admission_duration_seconds_count{") == 1 &&
    index($0, "name=\"mutate-deployments.vscaler.dev\"") && index($0, op) {sum += $NF}
    END {printf "%d", sum}'
}
enqueued_before=$(metric vscaler_webhook_enqueued_total)
updates_before=$(hook_reviews UPDATE)
deletes_before=$(hook_reviews DELETE)
reconciled_before=$(metric 'controller_runtime_reconcile_total{controller="verticalscaler",result="success"}')
echo "--- load: $rate reviews/s straight to the webhook, edits and dry-runs through the API server"
"$loadgen" --port "$WEBHOOK_PORT" --body "$work/review.json" --ca-dir "$CERT_DIR" --rate "$rate" \
  --connections 4 --reconnect-every 25 --seconds 0 --warmup 0 --check-uid \
  >"$work/loadgen.out" 2>"$work/loadgen.err" &
loadgen_pid=$!
pids+=("$loadgen_pid")
rotation_start_load edit create scaler
sleep 3

echo "--- rotate.sh serving"
old_fp=$(openssl x509 -in "$CERT_DIR/tls.crt" -noout -fingerprint)
old_ca=$(openssl x509 -in "$CERT_DIR/ca.crt" -noout -subject)
"$root/certs/rotate.sh" serving --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" ||
  fail "rotate.sh serving failed"
[ "$(openssl x509 -in "$CERT_DIR/tls.crt" -noout -fingerprint)" != "$old_fp" ] ||
  fail "the serving certificate did not change"
expect_eq "served after the serving rotation" "$(rotation_served_issuer "$WEBHOOK_PORT")" \
  "$(rotation_issuer "$CERT_DIR/tls.crt")"
sleep 2
echo "--- rotate.sh ca"
"$root/certs/rotate.sh" ca --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" ||
  fail "rotate.sh ca failed"
sleep 3

rotation_stop_load "rotations"
kill -TERM "$loadgen_pid"
wait "$loadgen_pid" || true
summary=$(cat "$work/loadgen.out")
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$summary"; }
[ -n "$summary" ] || fail "the load generator printed nothing: $(cat "$work/loadgen.err")"
[ "$(field failed)" = 0 ] ||
  fail "direct load: $(field failed) of $(field sent) reviews failed: $(grep -v 'certificate' "$work/loadgen.err" | head -n 5)"
awk -v r="$(field reviews_per_second)" -v want="$rate" 'BEGIN { exit !(r >= 0.8 * want) }' ||
  fail "direct load: only $(field reviews_per_second) reviews/s (wanted about $rate)"
[ "$(field certificates)" -ge 3 ] ||
  fail "direct load saw $(field certificates) serving certificates, wanted 3 (first, rotated, from the new CA): $(cat "$work/loadgen.err")"
echo "ok: $(field ok) reviews straight to the webhook, $(field reviews_per_second)/s, 0 failed," \
  "p99 $(field p99_ms) ms, $(field handshakes) handshakes, $(field certificates) serving certificates seen"

edits=$(grep -c '^ok$' "$work/edit.results")
updates=$(($(hook_reviews UPDATE) - updates_before))
deletes=$(($(hook_reviews DELETE) - deletes_before))
hints=$(($(metric vscaler_webhook_enqueued_total) - enqueued_before))
[ "$updates" -ge "$edits" ] || fail "the API server sent $updates UPDATE reviews for $edits edits"
# Every UPDATE review of the edited Deployment hinted; the direct and dry-run reviews did not (the
# upper bound: hundreds of dry-run CREATEs and thousands of direct reviews would break it).
[ "$hints" -ge "$updates" ] && [ "$hints" -le $((updates + deletes)) ] ||
  fail "hints the webhook enqueued during the load: $hints, want $updates (the UPDATE reviews the API server sent) to $((updates + deletes)) (and its DELETE reviews)"
echo "ok: hints enqueued during the load = $hints (UPDATE reviews $updates, DELETE reviews $deletes)"
reconciled=$(($(metric 'controller_runtime_reconcile_total{controller="verticalscaler",result="success"}') - reconciled_before))
[ "$reconciled" -ge 1 ] || fail "no reconcile followed the $edits hints"
echo "ok: $edits edits through the API server -> $updates reviews (conflict retries reviewed again)" \
  "-> $hints hints -> $reconciled hint-path reconciles (hints for a key already queued merge)"
declared_cpu || fail "the edited Deployment lost its declared requests.cpu"
echo "ok: the edited Deployment carries the declared requests.cpu 200m"

[ "$(openssl x509 -in "$CERT_DIR/ca.crt" -noout -subject)" != "$old_ca" ] || fail "the CA did not change"
expect_eq "served certificate's issuer" "$(rotation_served_issuer "$WEBHOOK_PORT")" \
  "$(rotation_issuer "$CERT_DIR/tls.crt")"
expect_eq "tls.crt from the new CA" "$(openssl verify -CAfile "$CERT_DIR/ca.crt" "$CERT_DIR/tls.crt")" \
  "$CERT_DIR/tls.crt: OK"
rotation_bundle_is "$CERT_DIR/ca.crt"
expect_eq "certificate reload failures in the operator" \
  "$(metric vscaler_serving_cert_reloads_total'{result="failure"}')" 0
echo "ok: rotations with the operator"
