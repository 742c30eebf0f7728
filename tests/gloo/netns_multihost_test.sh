#!/usr/bin/env bash
# Multi-host Gloo job on one machine: two network namespaces ("hosts") joined
# by a veth pair, each running `distlab launch --nnodes 2 --nproc-per-node 2`,
# so 4 ranks rendezvous through the TCP store on host A and run the collective
# suite's cases over real TCP between the namespaces (GLOO_SOCKET_IFNAME names
# each host's veth end).
#
#   netns_multihost_test.sh <distlab binary> <rank program>
#
# Exit 77 (ctest SKIP_RETURN_CODE) with the reason when the machine refuses
# namespaces (not root, no CAP_NET_ADMIN, `ip netns add` fails). Namespaces and
# veth are always removed, also on failure. Traffic stays inside the two
# namespaces on private addresses created here.
set -u
DISTLAB=${1:?usage: $0 <distlab binary> <rank program>}
RANK_PROGRAM=${2:?usage: $0 <distlab binary> <rank program>}
SKIP=77

id=$$
nsA="distlab-gloo-${id}-a"
nsB="distlab-gloo-${id}-b"
vethA="dlg${id}a"
vethB="dlg${id}b"
addrA=10.231.7.1
addrB=10.231.7.2
port=29611
logdir=$(mktemp -d /tmp/distlab-netns.XXXXXX)

cleanup() {
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
  ip link del "$vethA" 2>/dev/null
  rm -rf "$logdir"
}
trap cleanup EXIT

skip() {
  echo "SKIP: $1"
  exit $SKIP
}

command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is not installed"
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (running as uid $(id -u))"
err=$(ip netns add "$nsA" 2>&1) || skip "ip netns add failed: $err"
err=$(ip netns add "$nsB" 2>&1) || skip "ip netns add failed: $err"
err=$(ip link add "$vethA" type veth peer name "$vethB" 2>&1) || skip "cannot create a veth pair: $err"

set -e
ip link set "$vethA" netns "$nsA"
ip link set "$vethB" netns "$nsB"
ip -n "$nsA" addr add "$addrA/24" dev "$vethA"
ip -n "$nsB" addr add "$addrB/24" dev "$vethB"
for ns in "$nsA" "$nsB"; do ip -n "$ns" link set lo up; done
ip -n "$nsA" link set "$vethA" up
ip -n "$nsB" link set "$vethB" up
set +e

launch() {  # <namespace> <node rank> <interface>
  ip netns exec "$1" env GLOO_SOCKET_IFNAME="$3" "$DISTLAB" launch \
    --nnodes 2 --node-rank "$2" --nproc-per-node 2 \
    --master-addr "$addrA" --master-port "$port" --timeout 240 --rdzv-timeout 60 \
    "$RANK_PROGRAM"
}

launch "$nsA" 0 "$vethA" >"$logdir/node0.log" 2>&1 &
pidA=$!
launch "$nsB" 1 "$vethB" >"$logdir/node1.log" 2>&1 &
pidB=$!
wait $pidA
rcA=$?
wait $pidB
rcB=$?

echo "---- node 0 (namespace $nsA, $addrA) exit $rcA"
cat "$logdir/node0.log"
echo "---- node 1 (namespace $nsB, $addrB) exit $rcB"
cat "$logdir/node1.log"
if [ $rcA -ne 0 ] || [ $rcB -ne 0 ]; then
  echo "FAIL: the 2 x 2 job did not succeed on both nodes"
  exit 1
fi
passed=$(grep -c "collective cases passed over gloo" "$logdir/node0.log" "$logdir/node1.log" |
  awk -F: '{s += $2} END {print s}')
if [ "$passed" -ne 4 ]; then
  echo "FAIL: expected 4 ranks to report success, saw $passed"
  exit 1
fi
echo "PASS: 4 ranks on 2 namespaces ran the collective cases over TCP"
