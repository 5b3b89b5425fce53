#!/usr/bin/env bash
# Bulk throughput of this project against kernel TCP and kernel MPTCP, all measured in one run
# on the same veth pairs between two network namespaces (root needed). Prints one table.
#
#   sudo bash benches/net.sh            # 5 s per measurement
#   SECONDS_PER_RUN=10 bash benches/net.sh
#
# Setups (the kernel has no netem; htb limits the rate, nothing adds delay or loss):
#   A. one unlimited veth pair;
#   B. two veth pairs, each limited to 100 Mbit/s by htb on both ends.
# Upload direction (client -> server). The server has one address, reachable over each link.
# Installs iperf3 and mptcpd (for mptcpize) with apt when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

T=${SECONDS_PER_RUN:-5}
C=mpb-c$$
S=mpb-s$$
SERVER=10.92.9.1

[ "$(id -u)" = 0 ] || { echo "net.sh needs root (network namespaces, veth, tc)" >&2; exit 1; }
for tool in iperf3 mptcpize; do
    if ! command -v $tool >/dev/null; then
        apt-get install -y -qq iperf3 mptcpd >/dev/null
    fi
done
command -v tc >/dev/null || { echo "tc (iproute2) is missing" >&2; exit 1; }

cargo build -q --release -p mpudp --example upload
UPLOAD=target/release/examples/upload
KEYFILE=$(mktemp -u /tmp/mpudp-net-key.XXXXXX)
KEY=$($UPLOAD keygen "$KEYFILE")

cleanup() {
    rm -f "$KEYFILE"
    ip netns pids $S 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns pids $C 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del $C 2>/dev/null || true
    ip netns del $S 2>/dev/null || true
}
trap cleanup EXIT

setup() { # $1: number of links, $2: rate limit ("" for none)
    cleanup
    ip netns add $C
    ip netns add $S
    ip -n $C link set lo up
    ip -n $S link set lo up
    ip -n $S addr add $SERVER/32 dev lo
    for k in $(seq 0 $(($1 - 1))); do
        ip link add c$k netns $C type veth peer name s$k netns $S
        ip -n $C addr add 10.92.$((k + 1)).1/24 dev c$k
        ip -n $S addr add 10.92.$((k + 1)).2/24 dev s$k
        ip -n $C link set c$k up
        ip -n $S link set s$k up
        ip -n $C route replace $SERVER/32 dev c$k metric $((10 + k))
        if [ -n "$2" ]; then
            for side in "$C c$k" "$S s$k"; do
                set -- "$1" "$2" $side
                ip netns exec "$3" tc qdisc add dev "$4" root handle 1: htb default 10
                ip netns exec "$3" tc class add dev "$4" parent 1: classid 1:10 htb rate "$2" ceil "$2"
            done
        fi
    done
    ip netns exec $C sysctl -qw net.mptcp.enabled=1
    ip netns exec $S sysctl -qw net.mptcp.enabled=1
    ip -n $C mptcp limits set subflows 4 add_addr_accepted 4
    ip -n $S mptcp limits set subflows 4 add_addr_accepted 4
    for k in $(seq 1 $(($1 - 1))); do
        ip -n $C mptcp endpoint add 10.92.$((k + 1)).1 dev c$k subflow
    done
}

iperf() { # $1: "" or "mptcpize run"; prints Mbit/s
    ip netns exec $S $1 iperf3 -s -1 -p 5301 >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    local out
    out=$(ip netns exec $C $1 iperf3 -c $SERVER -p 5301 -t "$T" -J 2>/dev/null || true)
    wait $srv 2>/dev/null || true
    python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' <<<"$out" 2>/dev/null || echo "n/a"
}

ours() { # $1: bytes, $2..: client interface flags; prints Mbit/s
    local bytes=$1
    shift
    ip netns exec $S $UPLOAD --max-datagram 1472 server $SERVER:5300 --once --key "$KEYFILE" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    local out
    out=$(ip netns exec $C $UPLOAD --max-datagram 1472 client $SERVER:5300 --server-key "$KEY" --bytes "$bytes" "$@" 2>&1 || true)
    wait $srv 2>/dev/null || true
    local goodput wire
    goodput=$(sed -n 's/^sent .*: \([0-9.]*\) Mbit\/s$/\1/p' <<<"$out" | head -1 | grep . || echo "n/a")
    wire=$(sed -n 's/^wire \([0-9.]*\) Mbit\/s.*$/\1/p' <<<"$out" | head -1 | grep . || echo "n/a")
    echo "$goodput $wire"
}

ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print('%.0f%%' % (100*float(a)/float(b)) if b not in ('n/a','0') and a!='n/a' else 'n/a')" "$1" "$2"; }

# NET_SH_SETUP_ONLY=2:100mbit leaves that setup in place, for experiments by hand.
[ "${NET_SH_SETUP_ONLY:-}" = "" ] || { trap - EXIT; setup "${NET_SH_SETUP_ONLY%%:*}" "${NET_SH_SETUP_ONLY#*:}"; echo "namespaces $C $S"; exit 0; }

echo "setup A: one unlimited veth ($T s per run)" >&2
setup 1 ""
a_tcp=$(iperf "")
a_mptcp=$(iperf "mptcpize run")
read -r a_ours a_wire <<<"$(ours 2000000000 -i c0)"

echo "setup B: two veths at 100 Mbit/s each" >&2
setup 2 100mbit
b_tcp=$(iperf "")
b_mptcp=$(iperf "mptcpize run")
read -r b_ours b_wire <<<"$(ours $((200 * 1000 * 1000 / 8 * T)) -i c0 -i c1)"

printf '\nGoodput (application bytes per second), each tool in one %s s run; "wire" counts mpudp'"'"'s datagrams\n' "$T"
printf 'with their UDP, IPv4 and Ethernet headers, which is what htb meters.\n\n'
printf '| setup | kernel TCP (iperf3) | kernel MPTCP (mptcpize iperf3) | mpudp goodput | mpudp on the wire | against the target |\n'
printf '|---|---|---|---|---|---|\n'
printf '| A: one unlimited veth | %s Mbit/s | %s Mbit/s | %s Mbit/s | %s Mbit/s | goodput %s of kernel MPTCP (target >= 35%%) |\n' \
    "$a_tcp" "$a_mptcp" "$a_ours" "$a_wire" "$(ratio "$a_ours" "$a_mptcp")"
printf '| B: two veths, 100 Mbit/s each | %s Mbit/s | %s Mbit/s | %s Mbit/s | %s Mbit/s | goodput %s, wire %s of 200 Mbit/s (target >= 95%%) |\n' \
    "$b_tcp" "$b_mptcp" "$b_ours" "$b_wire" "$(ratio "$b_ours" 200)" "$(ratio "$b_wire" 200)"
