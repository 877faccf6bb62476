# shellcheck shell=bash
# tests/package's libvirt part inside the root, sourced by in-root, which
# defines say, fail, vm, job_field, slow_copy and work and has the package
# installed: the release's own libvirtd (9.0 on Debian 12) started there
# with the package's hook in hooks/qemu.d/ (libvirtd reads its hooks when it
# starts), a domain defined through it with a scsi disk on an I/O thread,
# that disk moved live by the package's daemon while writes go through the
# guest's device, the bytes compared, libvirt's live and persistent
# definitions checked, and the hook's messages in the daemon's log.

libvirt_domain=vmr-package-$$

# ends what libvirt_check started: the domain, libvirtd and virtlogd
libvirt_stop() {
	local pidfile pid
	if [ -S /run/libvirt/libvirt-sock ]; then
		virsh -q destroy "$libvirt_domain" >/dev/null 2>&1 || true
		virsh -q undefine "$libvirt_domain" >/dev/null 2>&1 || true
	fi
	for pidfile in /run/libvirtd.pid /run/virtlogd.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		kill "$pid" 2>/dev/null || true
		# the root's mounts go when the check ends: nothing may hold them
		for _ in $(seq 100); do
			[ -d "/proc/$pid" ] || break
			sleep 0.1
		done
		rm -f "$pidfile"
	done
	return 0
}

# waits up to 30 s for COMMAND... to succeed; fails with WHAT if it does not
libvirt_wait() {
	local what=$1
	shift
	for _ in $(seq 300); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "$what within 30 s"
}

# libvirt_job_is JOB STATE: whether JOB is in STATE
libvirt_job_is() {
	[ "$(job_field "$1" state)" = "$2" ]
}

# the source that `virsh domblklist` names for vda, live or (--inactive)
# persistent
libvirt_vda_source() {
	virsh -q domblklist "$libvirt_domain" "$@" | awk '$1 == "vda" { print $2 }'
}

libvirt_start() {
	say "libvirtd from the release, with the package's hook ..."
	apt-get install -y -q --no-install-recommends libvirt-clients >"$work/apt.log" 2>&1 ||
		fail "apt could not install libvirt-clients: $(grep -E '^E:' "$work/apt.log" | head -n1)"
	# the root gives libvirtd no mount namespace of its own for each QEMU
	# ("Failed disable mount propagation" otherwise); libvirt-daemon-system,
	# not installed, would make libvirtd's log directory and the user
	# libvirt-qemu, which its QEMU driver looks up at start; its QEMU runs as
	# root here
	mkdir -p /etc/libvirt /var/log/libvirt
	id libvirt-qemu >/dev/null 2>&1 || useradd --system --user-group --no-create-home libvirt-qemu
	printf 'namespaces = []\nuser = "root"\ngroup = "root"\n' >/etc/libvirt/qemu.conf
	virtlogd -d || fail "virtlogd did not start"
	libvirtd -d || fail "libvirtd did not start"
	libvirt_wait "libvirtd did not answer" virsh -q version
	local library hypervisor
	library=$(virsh version | sed -n 's/^Using library: libvirt \([0-9.]*\).*/\1/p')
	hypervisor=$(virsh version | sed -n 's/^Running hypervisor: QEMU \([0-9.]*\).*/\1/p')
	say "libvirtd $(libvirtd --version | sed -n 's/.* \([0-9.]*\)$/\1/p') (library $library) runs QEMU $hypervisor"
	case "$library $hypervisor" in
	9.0.*\ 7.2.*) ;;
	*) fail "libvirt $library with QEMU $hypervisor, not the release's 9.0 and 7.2" ;;
	esac
}

# a TCG domain that sits in the firmware, its one disk vda a scsi-hd on a
# virtio-scsi controller on I/O thread 1
libvirt_define() {
	local disk=$1
	cat >"$work/domain.xml" <<EOF
<domain type='qemu'>
  <name>$libvirt_domain</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <iothreads>1</iothreads>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <controller type='scsi' index='0' model='virtio-scsi'><driver iothread='1'/></controller>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='$disk'/>
      <target dev='vda' bus='scsi'/>
    </disk>
    <memballoon model='none'/>
  </devices>
</domain>
EOF
	virsh -q define "$work/domain.xml" >/dev/null 2>"$work/virsh.err" ||
		fail "virsh define: $(head -n1 "$work/virsh.err")"
	virsh -q start "$libvirt_domain" >/dev/null 2>"$work/virsh.err" ||
		fail "virsh start: $(head -n1 "$work/virsh.err")"
}

# libvirt_write IMAGE COUNT: COUNT writes of 64 KiB at random places of vda
# through its scsi-hd (the monitor's qemu-io on the device, as the guest's
# writes go), each made in IMAGE too
libvirt_write() {
	local image=$1 i block byte out
	for i in $(seq "$2"); do
		block=$((RANDOM % ($(stat -c %s "$image") / 65536)))
		byte=$((i % 255 + 1))
		# qemu-io's report goes to QEMU's stdout: the reply carries only errors
		out=$(virsh -q qemu-monitor-command "$libvirt_domain" --hmp \
			"qemu-io -d scsi0-0-0-0 \"write -P $byte $((block * 65536)) 64k\"" 2>&1) &&
			[ -z "$(echo "$out" | tr -d '[:space:]')" ] ||
			fail "qemu-io's write through the domain's device: $(echo "$out" | head -n1)"
		head -c 65536 /dev/zero | tr '\0' "\\$(printf %03o $byte)" |
			dd of="$image" bs=65536 seek="$block" conv=notrunc status=none
	done
}

libvirt_check() {
	local log=/var/log/virt-mirrord.log dest=$work/new/libvirt.raw job
	# the daemon's debug messages name each message of the hook
	G_MESSAGES_DEBUG=vmr-daemon systemctl restart virt-mirrord.service ||
		fail "the daemon did not restart with its debug messages"
	libvirt_start
	head -c 64M /dev/urandom >"$work/libvirt.raw"
	cp "$work/libvirt.raw" "$work/libvirt-expected.raw"
	libvirt_define "$work/libvirt.raw"
	libvirt_wait "the package's hook did not tell the daemon of $libvirt_domain" \
		grep -q "hook: $libvirt_domain started begin" "$log"
	libvirt_wait "the daemon did not connect to libvirt" grep -q "connected to libvirt at" "$log"
	say "moving vda of the libvirt domain $libvirt_domain at 1 MiB/s, with 24 writes through its device ..."
	# no write may race the pivot (QEMU 7.2 aborts, docs/operations.md): the
	# copy stays synced until it is told to pivot, after the last write
	job=$(slow_copy "$libvirt_domain" vda "$dest" --manual-pivot)
	libvirt_write "$work/libvirt-expected.raw" 24
	vm set-speed "$job" 0
	libvirt_wait "$job was not synced" libvirt_job_is "$job" synced
	vm pivot "$job"
	libvirt_wait "$job had not completed" libvirt_job_is "$job" completed
	cmp -s "$work/libvirt-expected.raw" "$dest" || fail "the moved disk's bytes differ from the source's"
	[ "$(libvirt_vda_source)" = "$dest" ] || fail "libvirt's live definition names $(libvirt_vda_source) for vda"
	[ "$(libvirt_vda_source --inactive)" = "$dest" ] ||
		fail "libvirt's persistent definition names $(libvirt_vda_source --inactive) for vda"
	libvirt_stop
	say "libvirt: the hook ran, the disk moved live, the bytes and both definitions checked"
}
