#!/usr/bin/env bash
# Bulk throughput of this project against kernel TCP, kernel MPTCP and quinn (QUIC), all
# measured in one run on the same veth pairs between two network namespaces (root needed).
# Each tool runs RUNS times (3 by default), the tools alternating, and the table gives medians,
# the ratios to quinn and to kernel TCP, and the CPU time each side of mpudp and quinn spent per
# gigabit moved.
#
#   sudo bash benches/net.sh            # 5 s per measurement, 3 rounds
#   SECONDS_PER_RUN=10 RUNS=5 bash benches/net.sh
#   SETUPS=B bash benches/net.sh        # one setup only (A, B or "A B", the default)
#
# Setups (the kernel has no netem; htb limits the rate, nothing adds delay or loss):
#   A. one unlimited veth pair;
#   B. two veth pairs, each limited to 100 Mbit/s by htb on both ends.
# Upload direction (client -> server). The server has one address, reachable over each link.
# mpudp's upload example runs with --no-digest, as quinn-bulk and iperf3 compute no hash of the
# bytes (its SHA-256 takes a fifth of a core at 2 Gbit/s). Both mpudp and quinn-bulk run on a
# current-thread tokio runtime (one thread per side: the comparison "on one core" of issue 23);
# mpudp runs a second time on a two-thread runtime, reported in its own column. mpudp hands its
# bytes over with write_chunk (issue 40); a run with --copy writes them through AsyncWrite.
# Issue 40's rows come after the main table: UDP alone (examples/udp_limit: GSO, with and
# without GRO), mpudp with 1 and 4 streams on 1 and 2 threads, a server on 1 and 2 cores
# receiving two uploads (setup A); a Siri request's delay (iperf-siri) alone and beside the
# upload (setup B).
# Installs iperf3 and mptcpd (for mptcpize) with apt when missing. Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

T=${SECONDS_PER_RUN:-5}
# A server whose client failed would wait for it forever: each gives up after this.
TMO=$((T * 8 + 60))
SETUPS=${SETUPS:-A B}
RUNS=${RUNS:-3}
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

cargo build -q --release -p mpudp --example upload --example udp_limit
cargo build -q --release -p iperf-siri
UPLOAD=${CARGO_TARGET_DIR:-target}/release/examples/upload
UDP_LIMIT=${CARGO_TARGET_DIR:-target}/release/examples/udp_limit
SIRI=${CARGO_TARGET_DIR:-target}/release/iperf-siri
# quinn with its defaults, one unidirectional stream (benches/quinn-bulk, outside the workspace).
cargo build -q --release --manifest-path benches/quinn-bulk/Cargo.toml
QUINN=${CARGO_TARGET_DIR:-benches/quinn-bulk/target}/release/quinn-bulk
CERT=$(mktemp -u /tmp/quinn-bulk-cert.XXXXXX)
KEYFILE=$(mktemp -u /tmp/mpudp-net-key.XXXXXX)
KEY=$($UPLOAD keygen "$KEYFILE")

cleanup() { # the namespaces (every setup starts with it)
    ip netns pids $S 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns pids $C 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del $C 2>/dev/null || true
    ip netns del $S 2>/dev/null || true
}
finish() {
    cleanup
    rm -f "$KEYFILE" "$CERT"
}
trap finish EXIT

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

# Runs "$@" in namespace $1 and appends "cpu USER SYS" (seconds) to its stderr.
timed() {
    local ns=$1
    shift
    ip netns exec "$ns" bash -c 'TIMEFORMAT="cpu %U %S"; time "$@"' _ "$@"
}

cpu() { # the CPU seconds of a `timed` run's output
    sed -n 's/^cpu \([0-9.]*\) \([0-9.]*\)$/\1 \2/p' <<<"$1" | awk '{ print $1 + $2 }' | head -1 | grep . || echo "n/a"
}

ours() { # $1: tokio worker threads, $2: bytes, $3: streams, $4..: client interface flags; $BOTH: flags for both ends; prints goodput and wire Mbit/s, client and server CPU s
    local threads=$1 bytes=$2 streams=$3
    shift 3
    local srvout
    srvout=$(mktemp)
    timed $S timeout $TMO $UPLOAD --threads "$threads" --max-datagram 1472 --no-digest ${BOTH:-} server $SERVER:5300 --uploads "$streams" --key "$KEYFILE" >"$srvout" 2>&1 &
    local srv=$!
    sleep 0.5
    local out
    out=$(timed $C $UPLOAD --threads "$threads" --max-datagram 1472 --no-digest ${BOTH:-} client $SERVER:5300 --server-key "$KEY" --bytes "$bytes" --streams "$streams" "$@" 2>&1 || true)
    wait $srv 2>/dev/null || true
    local goodput wire
    goodput=$(sed -n 's/^sent .*: \([0-9.]*\) Mbit\/s$/\1/p' <<<"$out" | head -1 | grep . || echo "n/a")
    wire=$(sed -n 's/^wire \([0-9.]*\) Mbit\/s.*$/\1/p' <<<"$out" | head -1 | grep . || echo "n/a")
    echo "$goodput $wire $(cpu "$out") $(cpu "$(cat "$srvout")")"
    rm -f "$srvout"
}

# A server on $1 cores (MpListener::bind_cores) receiving two uploads of $2 bytes each at once,
# from two client processes; prints the server's goodput (Mbit/s) and CPU s.
cores() {
    local srvout
    srvout=$(mktemp)
    timed $S timeout $TMO $UPLOAD --threads 1 --max-datagram 1472 --no-digest server $SERVER:5300 --uploads 2 --cores "$1" --key "$KEYFILE" >"$srvout" 2>&1 &
    local srv=$!
    sleep 0.5
    for _ in 1 2; do
        ip netns exec $C $UPLOAD --threads 1 --max-datagram 1472 --no-digest client $SERVER:5300 --server-key "$KEY" --bytes "$2" -i c0 >/dev/null 2>&1 &
    done
    wait $srv 2>/dev/null || true
    wait
    local goodput
    goodput=$(sed -n 's/^received .* from 2 uploads in .* (\([0-9.]*\) Mbit\/s)$/\1/p' "$srvout" | head -1 | grep . || echo "n/a")
    echo "$goodput $(cpu "$(cat "$srvout")")"
    rm -f "$srvout"
}

# UDP alone (examples/udp_limit): GSO batches sent for $T s, received with GRO ($1 "") or
# every datagram read by itself ($1 --no-gro); prints the receiver's Mbit/s.
udp() {
    local out
    out=$(mktemp)
    ip netns exec $S $UDP_LIMIT recv $SERVER:5500 $1 >"$out" 2>&1 &
    local srv=$!
    sleep 0.3
    ip netns exec $C $UDP_LIMIT send $SERVER:5500 --secs "$T" >/dev/null 2>&1 || true
    wait $srv 2>/dev/null || true
    sed -n 's/^received .*: \([0-9.]*\) Mbit\/s$/\1/p' "$out" | head -1 | grep . || echo "n/a"
    rm -f "$out"
}

# The Siri workload (iperf-siri, 20 requests of 3 bursts 100 ms apart, 100 ms between
# requests) on a connection of its own over both links, alone ($1 "") or beside an mpudp
# upload of $2 bytes ($1 "upload"); prints the requests' delay p50 and p99 in ms.
siri() {
    ip netns exec $S timeout $TMO $SIRI -s -1 -p 5201 -B $SERVER >/dev/null 2>&1 &
    local srv=$! up=""
    if [ "$1" = upload ]; then
        ip netns exec $S timeout $TMO $UPLOAD --threads 1 --max-datagram 1472 --no-digest server $SERVER:5300 --once --key "$KEYFILE" >/dev/null 2>&1 &
        up=$!
        sleep 0.3
        ip netns exec $C $UPLOAD --threads 1 --max-datagram 1472 --no-digest client $SERVER:5300 --server-key "$KEY" --bytes "$2" -i c0 -i c1 >/dev/null 2>&1 &
        sleep 1
    fi
    sleep 0.3
    local out
    out=$(ip netns exec $C $SIRI -c $SERVER -p 5201 --insecure -m c0,c1 --requests 20 --bursts 3 --burst-gap 100ms --wait 100ms -i 0 2>&1 || true)
    wait $srv 2>/dev/null || true
    [ -z "$up" ] || { ip netns pids $C | xargs -r kill 2>/dev/null; kill $up 2>/dev/null; wait 2>/dev/null || true; }
    sed -n 's/.*Delay (ms): p50 \([0-9.]*\) .* p99 \([0-9.]*\) .*/\1 \2/p' <<<"$out" | head -1 | grep . || echo "n/a n/a"
}

quinn() { # $1: bytes; prints goodput Mbit/s (as the receiver saw it), client and server CPU s
    local srvout
    srvout=$(mktemp)
    timed $S $QUINN server $SERVER:5400 "$CERT" >"$srvout" 2>&1 &
    local srv=$!
    sleep 0.5
    local out
    out=$(timed $C $QUINN client $SERVER:5400 "$CERT" "$1" 2>&1 || true)
    wait $srv 2>/dev/null || true
    local goodput
    goodput=$(sed -n 's/^received .*: \([0-9.]*\) Mbit\/s$/\1/p' "$srvout" | head -1 | grep . || echo "n/a")
    echo "$goodput $(cpu "$out") $(cpu "$(cat "$srvout")")"
    rm -f "$srvout"
}

median() { python3 -c "import sys, statistics; v=[float(x) for x in sys.argv[1:] if x!='n/a']; print('%.1f' % statistics.median(v) if v else 'n/a')" "$@"; }

# CPU milliseconds per gigabit: $1 CPU seconds, $2 bytes moved.
per_gbit() { python3 -c "import sys; c,b=sys.argv[1:]; print('%.0f' % (1000*float(c)/(float(b)*8/1e9)) if c!='n/a' else 'n/a')" "$1" "$2"; }

ratio_x() { python3 -c "import sys; a,b=sys.argv[1:]; print('%.2fx' % (float(a)/float(b)) if 'n/a' not in (a,b) and float(b) else 'n/a')" "$1" "$2"; }
ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print('%.0f%%' % (100*float(a)/float(b)) if b not in ('n/a','0') and a!='n/a' else 'n/a')" "$1" "$2"; }

# NET_SH_SETUP_ONLY=2:100mbit leaves that setup in place, for experiments by hand.
[ "${NET_SH_SETUP_ONLY:-}" = "" ] || { trap - EXIT; setup "${NET_SH_SETUP_ONLY%%:*}" "${NET_SH_SETUP_ONLY#*:}"; echo "namespaces $C $S"; exit 0; }

# One setup: RUNS rounds of every tool, alternating. $1: links, $2: rate, $3: bytes for the
# userspace tools, $4..: mpudp's interface flags. Sets tcp, mptcp, ours, wire, quinn (medians)
# and the CPU per gigabit of mpudp's and quinn's client and server.
measure() {
    local links=$1 rate=$2 bytes=$3
    shift 3
    setup "$links" "$rate"
    local t=() m=() o=() o2=() w=() oc=() os=() q=() qc=() qs=()
    local o4=() o24=() o2t=() ug=() un=() c1=() c2=() c1s=() c2s=() sa50=() sa99=() su50=() su99=() oa=() oac=()
    for k in $(seq 1 "$RUNS"); do
        echo "  round $k of $RUNS" >&2
        t+=("$(iperf "")")
        m+=("$(iperf "mptcpize run")")
        read -r g wi c sv <<<"$(ours 1 "$bytes" 1 "$@")"
        o+=("$g") w+=("$wi") oc+=("$c") os+=("$sv")
        read -r g wi c sv <<<"$(ours 2 "$bytes" 1 "$@")"
        o2+=("$g")
        read -r g c sv <<<"$(quinn "$bytes")"
        q+=("$g") qc+=("$c") qs+=("$sv")
        if [ "$links" = 1 ]; then # issue 40's rows
            read -r g _ c _ <<<"$(ours 1 "$bytes" 1 "$@" --copy)"
            oa+=("$g") oac+=("$c")
            read -r g _ <<<"$(ours 1 "$bytes" 4 "$@")"
            o4+=("$g")
            read -r g _ <<<"$(ours 2 "$bytes" 4 "$@")"
            o24+=("$g")
            read -r g _ <<<"$(BOTH=--driver-task ours 2 "$bytes" 1 "$@")"
            o2t+=("$g")
            ug+=("$(udp "")") un+=("$(udp --no-gro)")
            read -r g sv <<<"$(cores 1 $((bytes / 2)))"
            c1+=("$g") c1s+=("$sv")
            read -r g sv <<<"$(cores 2 $((bytes / 2)))"
            c2+=("$g") c2s+=("$sv")
        else
            read -r p50 p99 <<<"$(siri "" 0)"
            sa50+=("$p50") sa99+=("$p99")
            read -r p50 p99 <<<"$(siri upload $((bytes * 4)))"
            su50+=("$p50") su99+=("$p99")
        fi
    done
    tcp=$(median "${t[@]}") mptcp=$(median "${m[@]}") ours=$(median "${o[@]}") wire=$(median "${w[@]}")
    ours2=$(median "${o2[@]}") quinn=$(median "${q[@]}")
    ours_cpu="$(per_gbit "$(median "${oc[@]}")" "$bytes") / $(per_gbit "$(median "${os[@]}")" "$bytes")"
    quinn_cpu="$(per_gbit "$(median "${qc[@]}")" "$bytes") / $(per_gbit "$(median "${qs[@]}")" "$bytes")"
    echo "  runs: tcp ${t[*]}; mptcp ${m[*]}; mpudp ${o[*]}; mpudp on 2 threads ${o2[*]}; quinn ${q[*]}" >&2
    if [ "$links" = 1 ]; then
        ours4=$(median "${o4[@]}") ours24=$(median "${o24[@]}") ours2t=$(median "${o2t[@]}") udp_gro=$(median "${ug[@]}") udp_nogro=$(median "${un[@]}")
        core1=$(median "${c1[@]}") core2=$(median "${c2[@]}")
        core1_cpu=$(per_gbit "$(median "${c1s[@]}")" "$bytes") core2_cpu=$(per_gbit "$(median "${c2s[@]}")" "$bytes")
        ours_copy=$(median "${oa[@]}") sender_cpu="$(per_gbit "$(median "${oc[@]}")" "$bytes") / $(per_gbit "$(median "${oac[@]}")" "$bytes")"
        echo "  runs: AsyncWrite ${oa[*]}; 4 streams ${o4[*]}; 4 streams on 2 threads ${o24[*]}; 2 threads, driver as a task ${o2t[*]}; UDP with GRO ${ug[*]}, without ${un[*]}; server on 1 core ${c1[*]}, on 2 ${c2[*]}" >&2
    else
        siri_alone="$(median "${sa50[@]}") / $(median "${sa99[@]}")"
        siri_beside="$(median "${su50[@]}") / $(median "${su99[@]}")"
        echo "  runs: Siri p50 alone ${sa50[*]}, beside the upload ${su50[*]}; p99 alone ${sa99[*]}, beside ${su99[*]}" >&2
    fi
}

na=(n/a n/a n/a n/a n/a "n/a / n/a" "n/a / n/a" n/a)
a=("${na[@]}") b=("${na[@]}")
if [[ " $SETUPS " == *" A "* ]]; then
    echo "setup A: one unlimited veth ($T s per run, $RUNS rounds)" >&2
    measure 1 "" 2000000000 -i c0
    a=("$tcp" "$mptcp" "$ours" "$wire" "$quinn" "$ours_cpu" "$quinn_cpu" "$ours2")
fi
if [[ " $SETUPS " == *" B "* ]]; then
    echo "setup B: two veths at 100 Mbit/s each" >&2
    measure 2 100mbit $((200 * 1000 * 1000 / 8 * T)) -i c0 -i c1
    b=("$tcp" "$mptcp" "$ours" "$wire" "$quinn" "$ours_cpu" "$quinn_cpu" "$ours2")
fi

printf '\nGoodput (application bytes per second), medians of %s rounds of %s s runs, the tools alternating;\n' "$RUNS" "$T"
printf '"wire" counts mpudp'"'"'s datagrams with their UDP, IPv4 and Ethernet headers, which is what htb meters.\n'
printf 'CPU: milliseconds of CPU time per gigabit moved, sender / receiver (the whole process, setup included).\n'
printf 'mpudp and quinn each run on a current-thread tokio runtime (one thread per side); the column "mpudp, 2 threads"\n'
printf 'gives mpudp on a multi-thread runtime (its driver then on a thread of its own, Options::driver_thread).\n\n'
printf '| setup | kernel TCP | kernel MPTCP | quinn | mpudp goodput | mpudp on the wire | mpudp / quinn | mpudp / kernel TCP | CPU ms/Gbit mpudp | CPU ms/Gbit quinn | mpudp, 2 threads |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
row() { # $1: name, $2..: the setup's values
    local name=$1
    shift
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$1" "$2" "$5" "$3" "$4" \
        "$(ratio_x "$3" "$5")" "$(ratio "$3" "$1")" "$6" "$7" "$8"
}
row "A: one unlimited veth (Mbit/s)" "${a[@]}"
row "B: two veths, 100 Mbit/s each (Mbit/s)" "${b[@]}"
printf '\nTargets (issue 23): A, mpudp >= 1.5x quinn (now %s); B, goodput >= 95%% of 200 Mbit/s (now %s, wire %s).\n' \
    "$(ratio_x "${a[2]}" "${a[4]}")" "$(ratio "${b[2]}" 200)" "$(ratio "${b[3]}" 200)"

# Issue 40's rows: the UDP path's own limits, threads, streams and cores (setup A); a Siri
# request beside an upload (setup B).
if [[ " $SETUPS " == *" A "* ]]; then
    printf '\nSetup A, what limits mpudp (Mbit/s, medians of the same rounds). UDP alone: GSO batches of 44 datagrams,\n'
    printf 'received with GRO or one datagram at a time. Threads: mpudp on a current-thread runtime against a two-thread one,\n'
    printf 'one stream, then four (four connections of one client endpoint), the driver on a thread of its own (the default there);\n'
    printf '"driver as a task": one stream on two threads with the driver a task of the runtime. Cores: a server on 1 or 2 cores (bind_cores)\n'
    printf 'receiving two uploads from two client processes at once (all of it on this machine'"'"'s %s cores).\n' "$(nproc)"
    printf 'mpudp writes with write_chunk (the bytes copied once, into the packets); "AsyncWrite" copies them into the send\n'
    printf 'buffer first (sender CPU ms/Gbit: write_chunk / AsyncWrite).\n\n'
    printf '| UDP, GRO | UDP, no GRO | mpudp, 1 stream | AsyncWrite | sender CPU | 1 stream, 2 threads | driver as a task | 4 streams | 4 streams, 2 threads | server 1 core, 2 uploads | server 2 cores | CPU ms/Gbit server 1 / 2 cores |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    printf '| %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s | %s (%s) | %s | %s (%s) | %s / %s |\n' "$udp_gro" "$udp_nogro" "${a[2]}" \
        "$ours_copy" "$sender_cpu" "${a[7]}" "$(ratio_x "${a[7]}" "${a[2]}")" "$ours2t" "$(ratio_x "$ours2t" "${a[2]}")" "$ours4" "$ours24" "$(ratio_x "$ours24" "$ours4")" \
        "$core1" "$core2" "$(ratio_x "$core2" "$core1")" "$core1_cpu" "$core2_cpu"
    printf '\nTargets (issue 40): mpudp >= 0.8x kernel TCP (now %s); 2 threads >= 0.95x 1 (now %s, %s with 4 streams); 2 cores >= 1.7x 1 (now %s).\n' \
        "$(ratio_x "${a[2]}" "${a[0]}")" "$(ratio_x "${a[7]}" "${a[2]}")" "$(ratio_x "$ours24" "$ours4")" "$(ratio_x "$core2" "$core1")"
fi
if [[ " $SETUPS " == *" B "* ]]; then
    printf '\nSetup B, a Siri request (iperf-siri, its own connection over both links) alone and beside the upload:\n'
    printf 'delay p50 / p99 in ms, medians of the rounds: alone %s; beside the upload %s.\n' "$siri_alone" "$siri_beside"
fi
