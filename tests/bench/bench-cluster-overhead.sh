#!/bin/bash
# The cluster's cost per migration: N (default 20) sequential migrations of a
# 1 MiB disk of a guest-less QEMU by one daemon, first with host-only limits,
# then with a [cluster] section on a one-member etcd on loopback: the time
# from queued to copying (the daemon's own job history) and the requests etcd
# counts (grpc_server_handled_total of its /metrics). Not a test.
# Usage: tests/bench/bench-cluster-overhead.sh BUILDDIR
set -e
B=$(cd "${1:?usage: bench-cluster-overhead.sh BUILDDIR}" && pwd)
D=$(mktemp -d -t vmr-overhead-XXXXXX)
IMG=$(mktemp -d -t vmr-overhead-img-XXXXXX)
N=${N:-20}
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
peer=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
etcd --name m --data-dir $D/etcd --listen-client-urls http://127.0.0.1:$port --advertise-client-urls http://127.0.0.1:$port --listen-peer-urls http://127.0.0.1:$peer --initial-advertise-peer-urls http://127.0.0.1:$peer --initial-cluster m=http://127.0.0.1:$peer > $D/etcd.log 2>&1 &
EP=$!
head -c 1M /dev/urandom > $IMG/d0.raw
qemu-system-x86_64 -machine pc -accel tcg -S -nodefaults -display none -blockdev driver=file,filename=$IMG/d0.raw,node-name=f0 -blockdev driver=raw,file=f0,node-name=d0 -device virtio-blk-pci,drive=d0,id=disk0 -qmp unix:$D/qmp.sock,server=on,wait=off > $D/qemu.log 2>&1 &
QP=$!
sleep 2
cat > $D/cluster.conf <<EOC
[cluster]
name = bench
etcd = http://127.0.0.1:$port
host = h1
max-parallel = 1
EOC
printf '[defaults]\n' > $D/host.conf
requests() { curl -s http://127.0.0.1:$port/metrics | awk '/^grpc_server_handled_total/ {n += $2} END {print n}'; }
run() { # policy label
    mkdir -p $D/state-$2
    $B/daemon/virt-mirrord --foreground --socket $D/$2.sock --state-dir $D/state-$2 --no-libvirt --policy $1 > $D/daemon-$2.log 2>&1 &
    local dp=$!
    sleep 1.5
    local V="$B/cli/virt-mirror -c $D/$2.sock"
    $V attach vm --qmp $D/qmp.sock > /dev/null
    local before=$(requests)
    local t0=$(date +%s.%N)
    for i in $(seq 1 $N); do
        $V migrate vm disk0 $IMG/$2-$i.raw --wait > /dev/null
    done
    local t1=$(date +%s.%N)
    local after=$(requests)
    $V --json jobs | python3 -c '
import json,sys
jobs=json.load(sys.stdin)
lat=[]
for j in jobs:
    h={}
    for e in j["history"]:
        h.setdefault(e["state"], e["time"])
    lat.append((h["copying"]-h["queued"])/1000.0)
lat.sort()
print("'$2': %d migrations, queued->copying median %.1f ms, max %.1f ms" % (len(lat), lat[len(lat)//2], lat[-1]))'
    echo "$2: wall $(python3 -c "print(round($t1 - $t0, 2))") s for $N migrations; etcd requests (gRPC, as etcd counts them): $((after - before))"
    kill $dp; wait $dp 2>/dev/null || true

}
run $D/host.conf host-only
run $D/cluster.conf cluster
kill $QP $EP; wait 2>/dev/null || true
rm -rf $D $IMG
