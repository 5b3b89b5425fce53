#!/usr/bin/env bash
# What the qlog event log costs (issue 39): a bulk upload over loopback (iperf-siri, fullmesh
# over 127.0.0.1 and 127.0.0.2) with the log off and on (both sides writing their .sqlog),
# alternating, RUNS rounds (3 by default) of SECONDS_PER_RUN (3) seconds; then the log's size per
# Siri request (10 requests, both sides). Prints a table of medians and the on/off ratio.
#
#   bash benches/qlog.sh
#   RUNS=5 SECONDS_PER_RUN=5 bash benches/qlog.sh
set -euo pipefail
cd "$(dirname "$0")/.."
T=${SECONDS_PER_RUN:-3}
RUNS=${RUNS:-3}
cargo build --release -q -p iperf-siri
BIN=${CARGO_TARGET_DIR:-target}/release/iperf-siri
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# One test against a one-test server; prints the receiver's Mbit/s (the JSON's sum_received).
one() { # $1: extra flags for both sides
    local port=$((20000 + RANDOM % 20000))
    "$BIN" -s -1 -p "$port" -i 0 $1 > "$WORK/server.txt" 2>&1 &
    local srv=$!
    for _ in $(seq 50); do grep -q "server key:" "$WORK/server.txt" 2>/dev/null && break; sleep 0.1; done
    local key
    key=$(grep -o "server key: [A-Za-z0-9+/=]*" "$WORK/server.txt" | cut -d' ' -f3)
    "$BIN" -c 127.0.0.1 -p "$port" --server-key "$key" -m 127.0.0.1,127.0.0.2 -i 0 -J $1 $2 > "$WORK/client.json"
    wait "$srv" || true
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['end']['sum_received']['bits_per_second']/1e6)" "$WORK/client.json"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

off=(); on=()
for r in $(seq "$RUNS"); do
    off+=("$(one "" "--mode bulk -t $T")")
    rm -rf "$WORK/q"; on+=("$(one "--qlog $WORK/q" "--mode bulk -t $T")")
done
m_off=$(printf '%s\n' "${off[@]}" | median)
m_on=$(printf '%s\n' "${on[@]}" | median)
log_bytes=$(du -cb "$WORK"/q/*.sqlog | tail -1 | cut -f1)

rm -rf "$WORK/q"; one "--qlog $WORK/q" "--requests 10 --wait 0.3s" > /dev/null
client=$(du -cb "$WORK"/q/client-*.sqlog | tail -1 | cut -f1)
server=$(du -cb "$WORK"/q/server-*.sqlog | tail -1 | cut -f1)

printf '\nqlog cost, bulk upload over loopback, %s s, medians of %s rounds\n' "$T" "$RUNS"
printf '%-28s %12.0f\n' "qlog off (Mbit/s)" "$m_off" "qlog on (Mbit/s)" "$m_on"
printf '%-28s %12s\n' "on / off" "$(python3 -c "print(f'{$m_on/$m_off:.2f}')")"
printf '%-28s %12s\n' "log of the last upload (MB)" "$(python3 -c "print(f'{$log_bytes/1e6:.1f}')")"
printf '%-28s %12s\n' "Siri request: client (KB)" "$(python3 -c "print(f'{$client/10/1e3:.1f}')")"
printf '%-28s %12s\n' "Siri request: server (KB)" "$(python3 -c "print(f'{$server/10/1e3:.1f}')")"
