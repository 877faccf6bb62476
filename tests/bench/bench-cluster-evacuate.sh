#!/bin/bash
# Seed 001's experiment on the cluster: N guest-less VMs (one QEMU per
# daemon, N/H raw disks of 1 MiB each, copied at a fixed 512 KiB/s so that
# every migration takes about 2 s and the limits set the pace) spread over
# H daemons on one etcd, evacuated with `evacuate --cluster --wait` under
# cluster limits 5 per cluster / 2 per host, then 10 / 4, and once with
# host-only limits (2 per host, no [cluster], N = 50) for the cost of the cluster.
# Reports the total time against N, what doubling the limits does, the
# slot hand-over (a copy's bulk phase ends -> the next copy starts) with
# and without the cluster, etcd's requests per migration and per second
# (its /metrics), its keys and watchers. Every destination is compared with
# its source. Not a test: one run of each configuration, no rounds; exits
# with status 1 when a disk did not move with its bytes, 3 on a MISS.
# Usage: tests/bench/bench-cluster-evacuate.sh BUILDDIR [--short]
#   --short: N = 10 on 5 daemons, limits 5/2 and 10/4 only
set -e
B=$(cd "${1:?usage: bench-cluster-evacuate.sh BUILDDIR [--short]}" && pwd)
if [ "$2" = --short ]; then NS="10"; H=5; HOSTONLY=0; else NS="10 50 100"; H=${H:-10}; HOSTONLY=1; fi
SPEED=512K
D=$(mktemp -d -t vmr-cluster-evacuate-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; [ -n "$KEEP" ] || rm -rf $D' EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
port=$(free_port); peer=$(free_port)
etcd --name m --data-dir $D/etcd --listen-client-urls http://127.0.0.1:$port \
    --advertise-client-urls http://127.0.0.1:$port --listen-peer-urls http://127.0.0.1:$peer \
    --initial-advertise-peer-urls http://127.0.0.1:$peer --initial-cluster m=http://127.0.0.1:$peer \
    > $D/etcd.log 2>&1 &
metric() { curl -s http://127.0.0.1:$port/metrics | awk -v m="$1" '$1 ~ "^"m {n += $2} END {print n + 0}'; }
sleep 1.5

# one run: N, cluster max-parallel (0: host-only), per-host max-parallel, label
run() {
    local n=$1 cmax=$2 hmax=$3 label=$4 per=$(( ($1 + H - 1) / H )) R=$D/$4
    mkdir -p $R/src $R/dst $R/run
    local pids=()
    for h in $(seq 0 $((H - 1))); do
        local args=() k=0
        for i in $(seq 0 $((per - 1))); do
            [ $((h * per + i)) -lt $n ] || break
            head -c 1M /dev/urandom > $R/src/h$h-d$i.raw
            args+=(-blockdev driver=file,filename=$R/src/h$h-d$i.raw,node-name=f$i
                   -blockdev driver=raw,file=f$i,node-name=n$i -device virtio-blk-pci,drive=n$i,id=disk$i)
            k=$((k + 1))
        done
        [ $k -gt 0 ] || continue
        qemu-system-x86_64 -machine pc -accel tcg -S -nodefaults -display none -m 64 "${args[@]}" \
            -qmp unix:$R/qmp$h.sock,server=on,wait=off > $R/qemu$h.log 2>&1 &
        pids+=($!)
        { printf '[defaults]\nmax-parallel = %s\nmax-parallel-per-iothread = 0\nallowed-destinations = %s/dst/**\n' $hmax $R
          [ $cmax -eq 0 ] || printf '[cluster]\nname = %s\netcd = http://127.0.0.1:%s\nhost = h%s\nmax-parallel = %s\nlease-ttl = 10s\n' \
              $label $port $h $cmax; } > $R/policy$h.conf
        mkdir -p $R/state$h
        $B/daemon/virt-mirrord --foreground --socket $R/run/d$h.sock --state-dir $R/state$h --no-libvirt \
            --policy $R/policy$h.conf > $R/daemon$h.log 2>&1 &
        pids+=($!)
    done
    sleep 2
    for h in $(seq 0 $((H - 1))); do
        [ -S $R/qmp$h.sock ] && $B/cli/virt-mirror -c $R/run/d$h.sock attach vm$h --qmp $R/qmp$h.sock > /dev/null
    done
    local before=$(metric grpc_server_handled_total) t0=$(date +%s.%N) status=0
    if [ $cmax -eq 0 ]; then
        # host-only: every daemon its own evacuate, at once
        local cli=()
        for h in $(seq 0 $((H - 1))); do
            [ -S $R/qmp$h.sock ] || continue
            $B/cli/virt-mirror -c $R/run/d$h.sock evacuate --from $R/src --to $R/dst --speed $SPEED --wait > $R/cli$h.log 2>&1 &
            cli+=($!)
        done
        for p in "${cli[@]}"; do wait $p || status=1; done
    else
        $B/cli/virt-mirror -c $R/run/d0.sock evacuate --cluster --from $R/src --to $R/dst --speed $SPEED --wait > $R/cli.log 2>&1 || status=1
    fi
    local t1=$(date +%s.%N)
    local after=$(metric grpc_server_handled_total)
    local watchers=$(metric etcd_debugging_mvcc_watcher_total) streams=$(metric etcd_debugging_mvcc_watch_stream_total)
    local keys=$(ETCDCTL_API=3 etcdctl --endpoints http://127.0.0.1:$port get --prefix /virt-mirror/$label/ --keys-only | grep -c . || true)
    local equal=0
    for f in $R/src/*.raw; do cmp -s $f $R/dst/$(basename $f) && equal=$((equal + 1)); done
    for h in $(seq 0 $((H - 1))); do
        [ -S $R/run/d$h.sock ] && $B/cli/virt-mirror -c $R/run/d$h.sock --json jobs > $R/jobs$h.json
    done
    python3 - "$R" "$label" "$n" "$cmax" "$hmax" "$t0" "$t1" "$((after - before))" "$watchers" "$streams" "$keys" "$equal" "$status" <<'EOP'
import glob, json, sys
R, label, n, cmax, hmax, t0, t1, req, watchers, streams, keys, equal, status = sys.argv[1:]
n, cmax, hmax, req, equal = int(n), int(cmax), int(hmax), int(req), int(equal)
wall = float(t1) - float(t0)
starts, ends = [], []  # (µs, host)
for path in sorted(glob.glob(R + "/jobs*.json")):
    host = path.split("jobs")[-1].split(".")[0]
    for job in json.load(open(path)):
        first = {}
        for e in job["history"]:
            first.setdefault(e["state"], e["time"])
        if "copying" in first:
            starts.append((first["copying"], host))
        if "synced" in first:
            ends.append((first["synced"], host))
starts.sort(); ends.sort()
# hand-over: each start after the first wave, from the latest bulk end before it
# (on the same host for host-only limits, anywhere for the cluster's)
gaps = []
for t, host in starts:
    prev = [e for e, h in ends if e <= t and (cmax > 0 or h == host)]
    if prev and t - prev[-1] < 1e6:
        gaps.append((t - prev[-1]) / 1000.0)
gaps.sort()
med = gaps[len(gaps) // 2] if gaps else float("nan")
print(f"{label}: N={n} limits {cmax or '-'}/{hmax} wall {wall:.1f} s ({wall / n:.2f} s per VM), "
      f"{len(starts)} started, bytes equal {equal}/{n}, exit {status}; "
      f"hand-over median {med:.1f} ms (max {gaps[-1] if gaps else float('nan'):.1f} ms, {len(gaps)}); "
      f"etcd: {req} requests ({req / n:.1f} per VM, {req / wall:.0f}/s), {keys} keys left, "
      f"{watchers} watchers on {streams} streams")
with open(R + "/../figures.txt", "a") as out:
    print(label, n, cmax, hmax, f"{wall:.3f}", equal, status, f"{med:.3f}", req, keys, watchers, streams, file=out)
EOP
    for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait $p 2>/dev/null || true; done
    [ -n "$KEEP" ] || rm -rf $R/src $R/dst
}

for n in $NS; do
    run $n 5 2 c5-$n
    run $n 10 4 c10-$n
    # host-only at N = 50: 5 VMs a host, so that each host's own queue hands over slots
    [ $HOSTONLY -eq 0 ] || [ $n -ne 50 ] || run $n 0 2 host-$n
done
python3 - $D/figures.txt <<'EOP'
import sys
rows = {}
for line in open(sys.argv[1]):
    label, n, cmax, hmax, wall, equal, status, med, req, keys, w, s = line.split()
    rows[label] = dict(n=int(n), wall=float(wall), ok=int(equal) == int(n) and status == "0", med=float(med), req=int(req))
print()
ns = sorted({r["n"] for r in rows.values()})
for c in (5, 10):
    base = rows.get(f"c{c}-{ns[0]}")
    for n in ns:
        r = rows[f"c{c}-{n}"]
        lin = r["wall"] / (base["wall"] * n / ns[0])
        print(f"limits {c}/{c // 5 * 2}: N={n} {r['wall']:.1f} s, /N ratio {lin:.3f} (1.000: linear)")
    if len(ns) > 1:
        first, last = rows[f"c{c}-{ns[0]}"], rows[f"c{c}-{ns[-1]}"]
        slope = (last["wall"] - first["wall"]) / (ns[-1] - ns[0])
        print(f"limits {c}/{c // 5 * 2}: {slope:.3f} s per added VM, {slope * c:.2f} s per migration "
              f"at {c} at once, {first['wall'] - slope * ns[0]:.1f} s fixed")
for n in ns:
    a, b = rows[f"c5-{n}"], rows[f"c10-{n}"]
    print(f"N={n}: 10/4 over 5/2 time ratio {b['wall'] / a['wall']:.3f} (seed 001: about 0.5)")
ok = all(r["ok"] for r in rows.values())
halved = all(0.4 <= rows[f"c10-{n}"]["wall"] / rows[f"c5-{n}"]["wall"] <= 0.65 for n in ns)
print(f"every disk moved with its bytes: {'PASS' if ok else 'MISS'}")
print(f"doubling the limits halves the time (ratio 0.40 to 0.65): {'PASS' if halved else 'MISS'}")
if "host-50" in rows:
    print(f"hand-over median at N=50: cluster 5/2 {rows['c5-50']['med']:.1f} ms, 10/4 "
          f"{rows['c10-50']['med']:.1f} ms, host-only 2 per host {rows['host-50']['med']:.1f} ms")
# a disk not moved with its bytes is a failure; a missed target a MISS
sys.exit(1 if not ok else 0 if halved else 3)
EOP
