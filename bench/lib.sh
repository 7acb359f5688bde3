# shellcheck shell=bash
# Helpers for bench/sections/*.sh (sourced, not run). A section's benchmark programs print one
# result per line, "id<TAB>label<TAB>value"; these turn runs of vscaler's program and of its peer
# into the rows of bench/run.sh's table. POSIX awk only (Debian's default awk is mawk).

# median_rows FILE...: FILEs are repeated runs of one program; prints per id (first-seen order)
# "id<TAB>label<TAB>median value", so one noisy run on a shared machine does not make the table.
median_rows() {
  awk -F'\t' '
    NF >= 3 {
      if (!($1 in label)) { order[++n] = $1; label[$1] = $2 }
      count[$1]++
      value[$1, count[$1]] = $3 + 0
    }
    END {
      for (i = 1; i <= n; i++) {
        id = order[i]; k = count[id]
        for (a = 1; a <= k; a++) v[a] = value[id, a]
        for (a = 2; a <= k; a++) {            # insertion sort: k is tiny
          x = v[a]
          for (b = a - 1; b >= 1 && v[b] > x; b--) v[b + 1] = v[b]
          v[b + 1] = x
        }
        m = (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
        printf "%s\t%s\t%.2f\n", id, label[id], m
      }
    }' "$@"
}

# table_rows VSCALER_FILE PEER_FILE: joins the two (median) outputs on id and prints markdown rows
# "| label | vscaler | peer | vscaler/peer |" in vscaler's order; a missing value shows as n/a
# (a peer's 0 as 0, its ratio n/a); a value that is not a number ("-": it did not happen) is
# printed as it is, with ratio n/a.
# The label says the unit and which way is better (ops/s higher, ns/op lower).
table_rows() {
  awk -F'\t' '
    function show(x) {
      if (x >= 1e6) return sprintf("%.2fM", x / 1e6)
      if (x >= 100) return sprintf("%.0f", x)
      return sprintf("%.1f", x)
    }
    function numeric(x) { return x ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
    FILENAME == ARGV[1] { peer[$1] = $3; next }  # not FNR == NR: the peer file may be empty
    {
      if (!numeric($3) || ($1 in peer && !numeric(peer[$1]))) {
        printf "| %s | %s | %s | n/a |\n", $2, numeric($3) ? show($3) : $3,
          !($1 in peer) ? "n/a" : numeric(peer[$1]) ? show(peer[$1]) : peer[$1]
      } else if ($1 in peer && peer[$1] > 0) {
        printf "| %s | %s | %s | %.2f |\n", $2, show($3), show(peer[$1]), $3 / peer[$1]
      } else if ($1 in peer && peer[$1] == 0) {
        printf "| %s | %s | 0 | n/a |\n", $2, show($3)
      } else {
        printf "| %s | %s | n/a | n/a |\n", $2, show($3)
      }
    }' "$2" "$1"
}

# value KEY FILE: the value of a "key<TAB>value" line of vsbench's output.
value() { awk -F'\t' -v key="$1" '$1 == key {print $2}' "$2"; }
