#!/usr/bin/env bash
# Section "webhook": the Deployment admission hook over TLS, against two peers, in the same run.
#   vscaler             bench/tools/admission_server: vscaler's AdmissionServer with its real
#                       DeploymentHandler (cmd/main.cpp's wiring, allocator and defaults), a
#                       ScalerStore with a scaler for the review's Deployment (the lookup hits, a
#                       hint is enqueued, an Auto-mode JSONPatch is computed) declaring fixed values
#                       for one container; and again (closed loop only, rows "recommended scaler")
#                       with the scaler most are, every container recommended from its status;
#                       and (rows "front end alone") its front end answering the nginx peer's
#                       fixed body without parsing or handling the review (--answer fixed): the
#                       same event loops, TLS and HTTP/1.1 reading the whole body, so the gap to
#                       nginx splits between the network layer and the review's own work; and
#                       (rows "review parsed, no handler work") the whole server path with a hook
#                       that allows everything (--answer allow): the review parsed and validated
#                       whole (DESIGN: malformed JSON gets 400), its uid echoed, so the review's
#                       work splits between that parse and the Deployment hook's work after it;
#   nginx               the Debian package, a foreground process configured in a temp dir, taking
#                       the same POST bodies, reading each whole (echo_read_request_body, Debian's
#                       libnginx-mod-http-echo) and returning a small fixed body: the
#                       physical-limit reference for TLS + HTTP on this machine. A webhook cannot
#                       answer before it has read the review, and nginx's `return` alone does: it
#                       discards a body it does not need, so it answers once the head is in and
#                       reads the rest of the body after its answer (strace: read of the first
#                       16 KB TLS record, write of the answer, read of the remaining 9.7 KB);
#                       that is kept as a second reference, rows "nginx answering before the
#                       body is read";
#   controller-runtime  bench/peer-webhook: controller-runtime v0.25's webhook.Server decoding the
#                       review, the objects' metadata, a map lookup, allowed (no patch).
# All three get the same certificate (ECDSA P-256, certs/generate.sh) and are driven by the same
# C++ load generator (bench/tools/admission_load): a recorded ~22 KB Deployment UPDATE review
# (test/data/admission/deployment-update-20k.json, a fresh uid per request) POSTed over TLS
# keep-alive by 1 and 4 connections, each sending its next request when the answer is in;
# reviews/s and client-side p50/p99 latency; one connection again with the placement fixed
# (taskset): the server's threads and the load generator pinned to separate CPUs, then to one CPU
# they share, each server alike (unpinned, where the scheduler puts the two decides one
# connection's rate as much as the server does); then (vscaler and nginx) a steady
# VSCALER_BENCH_WEBHOOK_RATE (default 2000) reviews/s on 1 connection, open loop: p50/p99/p99.9
# counted from when each request was due. The machine has 2 cores: the load generator and the
# server under test share them, so these are rates of the pair, not of the server alone.
# Prints table rows (see bench/run.sh); details (TLS versions and ciphers, each run) on stderr.
# Environment: VSCALER_BENCH_RUNS (default 3), VSCALER_BENCH_WEBHOOK_SECONDS (per closed-loop
# measurement, default 3, after a 0.5 s warm-up), VSCALER_BENCH_WEBHOOK_RATE_SECONDS (the steady
# rate's window, default 10: at 2,000/s a 3 s window held 6,000 answers, so the p99 was the 60th
# slowest and one scheduling stall of a few ms from a neighbouring process, ~10 late answers,
# decided it; 20,000 answers make the p99 the 200th).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}
seconds=${VSCALER_BENCH_WEBHOOK_SECONDS:-3}
rate_seconds=${VSCALER_BENCH_WEBHOOK_RATE_SECONDS:-10}
rate=${VSCALER_BENCH_WEBHOOK_RATE:-2000}
build=${VSCALER_BUILD_DIR:-build/release}
load=$build/bench/tools/admission_load
server=$build/bench/tools/admission_server
review=test/data/admission/deployment-update-20k.json
cmake --build "$build" --target admission_load admission_server >&2
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "webhook.sh: nginx is missing (scripts/deps.sh test)" >&2; exit 1; }
nginx_echo=/usr/lib/nginx/modules/ngx_http_echo_module.so
[ -f "$nginx_echo" ] ||
  { echo "webhook.sh: $nginx_echo is missing (scripts/deps.sh test installs it)" >&2; exit 1; }
mkdir -p build/bench
(cd bench/peer-webhook && go build -o "$root/build/bench/peer-webhook" .) >&2
peer=build/bench/peer-webhook

tmp=$(mktemp -d /tmp/vscaler-bench-webhook.XXXXXX)
chmod 755 "$tmp" # nginx's workers run as another user when started as root
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

certs/generate.sh --cert-dir "$tmp/certs" >/dev/null 2>&1
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_port FILE: until a server wrote its port into FILE.
wait_port() {
  local i
  for i in $(seq 100); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "webhook.sh: a server did not start (no $1)" >&2
  exit 1
}

"$server" --cert-dir "$tmp/certs" --port-file "$tmp/vscaler.port" 2>"$tmp/vscaler.log" &
pids+=($!)
echo $! >"$tmp/vscaler.pid"
"$server" --cert-dir "$tmp/certs" --port-file "$tmp/vscaler-recommended.port" --recommended true \
  2>"$tmp/vscaler-recommended.log" &
pids+=($!)
echo $! >"$tmp/vscaler-recommended.pid"
"$server" --cert-dir "$tmp/certs" --port-file "$tmp/vscaler-front-end.port" --answer fixed \
  2>"$tmp/vscaler-front-end.log" &
pids+=($!)
echo $! >"$tmp/vscaler-front-end.pid"
"$server" --cert-dir "$tmp/certs" --port-file "$tmp/vscaler-parsed.port" --answer allow \
  2>"$tmp/vscaler-parsed.log" &
pids+=($!)
echo $! >"$tmp/vscaler-parsed.pid"
# GOMAXPROCS fixed: since Go 1.25 the runtime follows its CPU affinity, and pinned (pinned_rows)
# it would drop to one P while vscaler and nginx keep their loops and workers.
GOMAXPROCS=$(nproc) "$peer" -cert-dir "$tmp/certs" -port-file "$tmp/controller-runtime.port" \
  2>"$tmp/controller-runtime.log" &
pids+=($!)
echo $! >"$tmp/controller-runtime.pid"
nginx_port=$(free_port)
mkdir -p "$tmp/nginx-prefix"
cat >"$tmp/nginx-prefix/nginx.conf" <<EOF
# One worker per core, as nginx is usually run; no logging. /mutate-deployments reads each body
# whole before it answers, as a webhook must; /answer-before-body answers at once and discards the
# body (nginx's way with a body a location does not need).
load_module $nginx_echo;
worker_processes auto;
pid $tmp/nginx-prefix/nginx.pid;
error_log $tmp/nginx-prefix/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx-prefix/body;
  proxy_temp_path $tmp/nginx-prefix/proxy;
  fastcgi_temp_path $tmp/nginx-prefix/fastcgi;
  uwsgi_temp_path $tmp/nginx-prefix/uwsgi;
  scgi_temp_path $tmp/nginx-prefix/scgi;
  client_max_body_size 8m;
  client_body_buffer_size 64k;
  keepalive_requests 10000; # as vscaler's server (AdmissionServerOptions::keep_alive_max_requests)
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $tmp/certs/tls.crt;
    ssl_certificate_key $tmp/certs/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location = /mutate-deployments {
      echo_read_request_body;
      echo_exec @answer;
    }
    location = /answer-before-body {
      default_type application/json;
      return 200 '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"00000000-0000-0000-0000-000000000000","allowed":true}}';
    }
    location @answer {
      default_type application/json;
      return 200 '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"00000000-0000-0000-0000-000000000000","allowed":true}}';
    }
  }
}
EOF
"$nginx" -p "$tmp/nginx-prefix" -c "$tmp/nginx-prefix/nginx.conf" -e "$tmp/nginx-prefix/error.log" \
  -g 'daemon off;' 2>"$tmp/nginx-prefix/stderr.log" &
pids+=($!)
echo $! >"$tmp/nginx.pid"
wait_port "$tmp/vscaler.port"
wait_port "$tmp/vscaler-recommended.port"
wait_port "$tmp/vscaler-front-end.port"
wait_port "$tmp/vscaler-parsed.port"
wait_port "$tmp/controller-runtime.port"
for i in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$nginx_port") 2>/dev/null && break
  [ "$i" -lt 100 ] || { echo "webhook.sh: nginx did not start: $(cat "$tmp/nginx-prefix/error.log")" >&2; exit 1; }
  sleep 0.1
done
echo "$nginx_port" >"$tmp/nginx.port"
# The same nginx on its other path (see its configuration).
echo "$nginx_port" >"$tmp/nginx-early.port"
cp "$tmp/nginx.pid" "$tmp/nginx-early.pid"

# server_pids PID: PID and its children (nginx's workers).
server_pids() { echo "$1" $(pgrep -P "$1" || true); }

# cpu_ticks PID: user + system clock ticks of PID and of its children (nginx's workers), every
# thread of each counted.
cpu_ticks() {
  local pid total=0 fields
  for pid in $(server_pids "$1"); do
    [ -r "/proc/$pid/stat" ] || continue
    # Fields 14 and 15 (utime, stime), counted after the ")" that ends the command name.
    fields=$(sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }')
    total=$((total + fields))
  done
  echo "$total"
}
ticks_per_second=$(getconf CLK_TCK)

# pin_server PID CPUS: every thread of the server (and of its children) on CPUS. Once more after
# a short wait when it fails: a thread that ends between taskset's listing and its call fails it.
pin_server() {
  local pid
  for pid in $(server_pids "$1"); do
    taskset -a -p -c "$2" "$pid" >/dev/null || { sleep 0.1 && taskset -a -p -c "$2" "$pid" >/dev/null; }
  done
}
# The CPUs this script may use (its affinity, e.g. a container's cpuset, not 0..nproc-1): the
# pinned rows use the first two, and the servers go back to all of them afterwards.
allowed_cpus=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
mapfile -t cpu_list < <(tr ',' '\n' <<<"$allowed_cpus" |
  awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }')

# pinned_rows NAME RUN PORT PATH PID PLACEMENT SERVER_CPU LOAD_CPU CHECK: one connection, closed
# loop, with the server's threads pinned to SERVER_CPU and the load generator to LOAD_CPU; rows
# rate1_PLACEMENT, p50_1_PLACEMENT and cpu_1_PLACEMENT. Unpinned, one connection's rate is decided
# by where the scheduler happens to put the two processes as much as by the server: on the
# 2-vCPU AMD EPYC of 2026-12-07, the Deployment hook took 48-51 us of server CPU per review when
# it shared a CPU with the load generator and 84-88 us when they ran apart (each wake-up and each
# review's bytes then cross CPUs), nginx 29-32 and 55-58 us, and which of the two an unpinned run
# got varied from run to run and from server to server. Pinned, each server is measured in both
# placements, alike.
pinned_rows() {
  local name=$1 run=$2 port=$3 path=$4 pid=$5 placement=$6 server_cpu=$7 load_cpu=$8 check=$9
  local out before after
  pin_server "$pid" "$server_cpu"
  before=$(cpu_ticks "$pid")
  if ! out=$(taskset -c "$load_cpu" "$load" --port "$port" --path "$path" --body "$review" \
    --ca "$tmp/certs/ca.crt" --connections 1 --seconds "$seconds" $check 2>>"$tmp/load.err"); then
    echo "webhook.sh: pinned requests to $name failed: $out $(tail -n 5 "$tmp/load.err")" >&2
    exit 1
  fi
  after=$(cpu_ticks "$pid")
  pin_server "$pid" "$allowed_cpus"
  echo "webhook.sh: run $run $name pinned $placement: $out cpu_ticks=$((after - before))" >&2
  awk -v name="$name" -v p="$placement" -v ticks=$((after - before)) -v hz="$ticks_per_second" '
    {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      where = p == "apart" ? "server and load generator pinned to separate CPUs" : "server and load generator pinned to one CPU they share"
      goal = name == "vscaler-front-end" || name == "vscaler-parsed" || name == "nginx-early" ? "" : "; goal >= 0.75x nginx"
      printf "rate1_%s\t20 KB UPDATE review over TLS, 1 conn, %s (reviews/s%s)\t%s\n", p, where, goal, v["reviews_per_second"]
      printf "p50_1_%s\t20 KB UPDATE review over TLS, 1 conn, %s, p50 (us)\t%.1f\n", p, where, v["p50_ms"] * 1000
      printf "cpu_1_%s\t20 KB UPDATE review over TLS, 1 conn, %s, server CPU per review (us; user + system, all threads)\t%.1f\n", p, where, ticks / hz / v["answered"] * 1e6
    }' <<<"$out" >>"$tmp/$name.$run"
}

# measure NAME RUN: 1 and 4 connections against server NAME; appends "id<TAB>label<TAB>value"
# rows to $tmp/NAME.RUN (latencies in microseconds). Besides the rates, the server's own CPU time
# per review over the whole closed-loop run (warm-up included, divided by every answer of it):
# what the server costs, apart from the load generator's share of the two cores, which the rates
# include and which moves with how the scheduler places the two processes.
measure() {
  local name=$1 run=$2 port connections out check="" pid before after path=/mutate-deployments
  port=$(cat "$tmp/$name.port")
  pid=$(cat "$tmp/$name.pid") # nginx: its master, whose workers are its children
  [ "$name" = nginx-early ] && path=/answer-before-body
  # The fixed answers (nginx's, the front end's alone) cannot echo the uid.
  case "$name" in
  nginx | nginx-early | vscaler-front-end) ;;
  *) check=--check-uid ;;
  esac
  for connections in 1 4; do
    before=$(cpu_ticks "$pid")
    if ! out=$("$load" --port "$port" --path "$path" --body "$review" --ca "$tmp/certs/ca.crt" \
      --connections "$connections" --seconds "$seconds" $check 2>>"$tmp/load.err"); then
      echo "webhook.sh: requests to $name failed: $out $(tail -n 5 "$tmp/load.err")" >&2
      exit 1
    fi
    after=$(cpu_ticks "$pid")
    echo "webhook.sh: run $run $name: $out cpu_ticks=$((after - before))" >&2
    awk -v name="$name" -v c="$connections" -v ticks=$((after - before)) -v hz="$ticks_per_second" '
      {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        conns = c == 1 ? "1 conn" : c " conns"
        goal = name == "vscaler-front-end" || name == "vscaler-parsed" || name == "nginx-early" ? "" : "; goal >= 0.75x nginx"
        printf "rate%s\t20 KB UPDATE review over TLS, %s (reviews/s, client and server share 2 cores%s)\t%s\n", c, conns, goal, v["reviews_per_second"]
        printf "p50_%s\t20 KB UPDATE review over TLS, %s, p50 (us)\t%.1f\n", c, conns, v["p50_ms"] * 1000
        printf "p99_%s\t20 KB UPDATE review over TLS, %s, p99 (us)\t%.1f\n", c, conns, v["p99_ms"] * 1000
        printf "cpu_%s\t20 KB UPDATE review over TLS, %s, server CPU per review (us; user + system, all threads)\t%.1f\n", c, conns, ticks / hz / v["answered"] * 1e6
      }' <<<"$out" >>"$tmp/$name.$run"
  done
  # One connection again with the placement fixed (see pinned_rows): the server's threads and
  # the load generator on separate CPUs, then on one CPU they share.
  if [ "${#cpu_list[@]}" -ge 2 ]; then
    pinned_rows "$name" "$run" "$port" "$path" "$pid" apart "${cpu_list[1]}" "${cpu_list[0]}" "$check"
    pinned_rows "$name" "$run" "$port" "$path" "$pid" shared "${cpu_list[0]}" "${cpu_list[0]}" "$check"
  fi
  # A steady rate, open loop (latency from when each request was due): what an API server
  # sending $rate reviews/s sees. controller-runtime peaks below it, so it is left out, and the
  # recommended scaler's, the front end's, the parse's and the early nginx's rows stop at the
  # closed-loop rates.
  case "$name" in
  controller-runtime | vscaler-recommended | vscaler-front-end | vscaler-parsed | nginx-early)
    return 0
    ;;
  esac
  if ! out=$("$load" --port "$port" --path "$path" --body "$review" --ca "$tmp/certs/ca.crt" \
    --connections 1 --rate "$rate" --seconds "$rate_seconds" $check 2>>"$tmp/load.err"); then
    echo "webhook.sh: paced requests to $name failed: $out $(tail -n 5 "$tmp/load.err")" >&2
    exit 1
  fi
  echo "webhook.sh: run $run $name at $rate/s: $out" >&2
  awk -v r="$rate" '
    {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      label = "20 KB UPDATE review over TLS, steady " r "/s on 1 conn (open loop)"
      printf "p50_rate\t%s, p50 (us)\t%.1f\n", label, v["p50_ms"] * 1000
      printf "p99_rate\t%s, p99 (us; goal <= 1000)\t%.1f\n", label, v["p99_ms"] * 1000
      printf "p999_rate\t%s, p99.9 (us)\t%.1f\n", label, v["p999_ms"] * 1000
    }' <<<"$out" >>"$tmp/$name.$run"
}

# Alternate the servers within each run so that load from elsewhere hits all alike.
servers=(vscaler vscaler-recommended vscaler-front-end vscaler-parsed nginx nginx-early
  controller-runtime)
for run in $(seq "$runs"); do
  for name in "${servers[@]}"; do measure "$name" "$run"; done
done
for name in "${servers[@]}"; do median_rows "$tmp/$name".* >"$tmp/$name"; done
# The same vscaler rows twice, once per peer, the peer named in the label; interleaved.
awk -F'\t' -v OFS='\t' '{ $2 = "webhook " $2 " vs nginx"; print }' "$tmp/vscaler" >"$tmp/vs-nginx"
awk -F'\t' -v OFS='\t' '{ $2 = "webhook " $2 " vs controller-runtime"; print }' "$tmp/vscaler" \
  >"$tmp/vs-controller-runtime"
table_rows "$tmp/vs-nginx" "$tmp/nginx" >"$tmp/rows-nginx"
table_rows "$tmp/vs-controller-runtime" "$tmp/controller-runtime" >"$tmp/rows-controller-runtime"
paste -d'\n' "$tmp/rows-nginx" "$tmp/rows-controller-runtime"
# rows_vs_nginx NAME WHAT: server NAME's rows against nginx's, labelled "webhook, WHAT: ...".
rows_vs_nginx() {
  awk -F'\t' -v OFS='\t' -v what="$2" '{ $2 = "webhook, " what ": " $2 " vs nginx"; print }' \
    "$tmp/$1" >"$tmp/$1-vs-nginx"
  table_rows "$tmp/$1-vs-nginx" "$tmp/nginx"
}
rows_vs_nginx vscaler-recommended "recommended scaler"
rows_vs_nginx vscaler-front-end "front end alone (fixed answer, review not parsed)"
rows_vs_nginx vscaler-parsed "review parsed, no handler work (simdjson, uid echoed)"
# The Deployment hook's closed-loop rows against nginx answering before it has read the body.
awk -F'\t' -v OFS='\t' '$1 ~ /^(rate|p50_|p99_|cpu_)[14](_apart|_shared)?$/ {
    sub(/; goal >= 0.75x nginx/, "", $2)
    $2 = "webhook " $2 " vs nginx answering before the body is read"; print
  }' "$tmp/vscaler" >"$tmp/vs-nginx-early"
table_rows "$tmp/vs-nginx-early" "$tmp/nginx-early"
