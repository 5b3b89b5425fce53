#!/usr/bin/env bash
# Bulk throughput of a path carried over TCP (PROTOCOL.md §4.11) against the same path over
# UDP, measured in one run on the same veth between two network namespaces (root needed).
# The TCP runs have nftables drop UDP in the client's namespace, so the client's INITIAL goes
# over TCP after the 1 s bound and the whole upload rides the TCP carrier. RUNS rounds (3 by
# default), the two alternating; the table gives medians (goodput after the connection is up)
# and their ratio.
#
#   sudo bash benches/carrier.sh
#   RUNS=5 BYTES=2000000000 bash benches/carrier.sh
#
# Setups: A. one unlimited veth; B. one veth limited to 100 Mbit/s by htb on both ends.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
BYTES=${BYTES:-1000000000}
C=mpc-c$$
S=mpc-s$$
SERVER=10.89.9.1

[ "$(id -u)" = 0 ] || { echo "carrier.sh needs root (network namespaces, veth, tc, nft)" >&2; exit 1; }
command -v nft >/dev/null || apt-get install -y -qq nftables >/dev/null
cargo build -q --release -p mpudp --example upload
UPLOAD=${CARGO_TARGET_DIR:-target}/release/examples/upload
KEYFILE=$(mktemp -u /tmp/mpudp-carrier-key.XXXXXX)
KEY=$($UPLOAD keygen "$KEYFILE")

cleanup() {
    ip netns pids $S 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns pids $C 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del $C 2>/dev/null || true
    ip netns del $S 2>/dev/null || true
}
trap 'cleanup; rm -f "$KEYFILE"' EXIT

setup() { # $1: rate limit ("" for none)
    cleanup
    ip netns add $C
    ip netns add $S
    ip -n $C link set lo up
    ip -n $S link set lo up
    ip -n $S addr add $SERVER/32 dev lo
    ip link add c0 netns $C type veth peer name s0 netns $S
    ip -n $C addr add 10.89.1.1/24 dev c0
    ip -n $S addr add 10.89.1.2/24 dev s0
    ip -n $C link set c0 up
    ip -n $S link set s0 up
    ip -n $C route replace $SERVER/32 dev c0
    if [ -n "$1" ]; then
        ip netns exec $C tc qdisc add dev c0 root handle 1: htb default 10
        ip netns exec $C tc class add dev c0 parent 1: classid 1:10 htb rate "$1" ceil "$1"
        ip netns exec $S tc qdisc add dev s0 root handle 1: htb default 10
        ip netns exec $S tc class add dev s0 parent 1: classid 1:10 htb rate "$1" ceil "$1"
    fi
}

block_udp() { # $1: on | off
    if [ "$1" = on ]; then
        ip netns exec $C nft -f - <<'EOF'
table inet carrier_bench {
    chain out { type filter hook output priority 0; oifname "c0" meta l4proto udp drop; }
    chain in { type filter hook input priority 0; iifname "c0" meta l4proto udp drop; }
}
EOF
    else
        ip netns exec $C nft delete table inet carrier_bench 2>/dev/null || true
    fi
}

run() { # prints the goodput in Mbit/s
    ip netns exec $S $UPLOAD --threads 1 --max-datagram 1472 --no-digest server $SERVER:5300 --once --key "$KEYFILE" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    local out
    out=$(ip netns exec $C $UPLOAD --threads 1 --max-datagram 1472 --no-digest --tcp-fallback-ms 1000 \
        client $SERVER:5300 --server-key "$KEY" --bytes "$1" -i c0 2>&1 || true)
    wait $srv 2>/dev/null || true
    sed -n 's/^sent .*: \([0-9.]*\) Mbit\/s$/\1/p' <<<"$out" | head -1 | grep . || echo "n/a"
}

median() { python3 -c "import sys, statistics; v=[float(x) for x in sys.argv[1:] if x!='n/a']; print('%.1f' % statistics.median(v) if v else 'n/a')" "$@"; }
ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print('%.2f' % (float(a)/float(b)) if 'n/a' not in (a,b) and float(b) else 'n/a')" "$1" "$2"; }

rows=()
for s in A B; do
    rate=""
    bytes=$BYTES
    if [ $s = B ]; then rate=100mbit bytes=$((BYTES / 20)); fi
    setup "$rate"
    u=() t=()
    for k in $(seq 1 "$RUNS"); do
        echo "  setup $s, round $k of $RUNS" >&2
        block_udp off
        u+=("$(run "$bytes")")
        block_udp on
        t+=("$(run "$bytes")")
    done
    block_udp off
    echo "  runs: UDP ${u[*]}; TCP carrier ${t[*]}" >&2
    um=$(median "${u[@]}") tm=$(median "${t[@]}")
    rows+=("$s $um $tm $(ratio "$tm" "$um")")
done

printf '\nUpload goodput on one veth (Mbit/s, medians of %s rounds, UDP and TCP carrier alternating)\n' "$RUNS"
printf '| setup | over UDP | over a TCP carrier | TCP / UDP |\n|---|---:|---:|---:|\n'
for r in "${rows[@]}"; do
    read -r s um tm q <<<"$r"
    name="A: unlimited"
    [ "$s" = B ] && name="B: 100 Mbit/s"
    printf '| %s | %s | %s | %s |\n' "$name" "$um" "$tm" "$q"
done
