#!/bin/bash
# `meson install --destdir` into a temporary directory, then checks what it
# put there: the man pages, the bash completion where bash-completion looks,
# and the systemd unit, which `systemd-analyze verify` must pass as
# installed (with the installed daemon at its ExecStart path: the
# installed sbindir is bind-mounted over the real one in a mount namespace
# of its own, so nothing of the machine changes). TAP output.
#
#   check-install.sh MESON BUILD_ROOT SBINDIR UNIT_DIR COMPLETIONS_DIR SERVICE_TYPE MAN_PAGE...
#
# MAN_PAGE is a path below the prefix, e.g. share/man/man1/virt-mirror.1
# with the prefix (MANDIR/man1/virt-mirror.1).
set -uo pipefail

meson=$1 build_root=$2 sbindir=$3 unit_dir=$4 completions_dir=$5 service_type=$6
shift 6

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
# a check this machine cannot make: a skip, or a failure under REQUIRE_INTEGRATION=1
cannot() {
	n=$((n + 1))
	if [ "${REQUIRE_INTEGRATION:-}" = 1 ]; then
		failed=$((failed + 1))
		echo "not ok $n - $* (REQUIRE_INTEGRATION=1 makes this a failure)"
	else
		echo "ok $n # SKIP $*"
	fi
}

destdir=$(mktemp -d "${TMPDIR:-/tmp}/vmr-install-XXXXXX")
trap 'rm -rf "$destdir"' EXIT

if out=$("$meson" install -C "$build_root" --destdir "$destdir" --no-rebuild --quiet 2>&1); then
	ok "meson install --destdir"
else
	not_ok "meson install --destdir"
	echo "$out" | sed 's/^/# /'
	echo "1..$n"
	exit 1
fi

for page in "$@"; do
	if [ -s "$destdir/$page" ]; then
		ok "man page $page installed"
	else
		not_ok "man page $page installed"
	fi
done

completion=$destdir/$completions_dir/virt-mirror
if [ -s "$completion" ] && bash -n "$completion"; then
	ok "bash completion installed in $completions_dir"
else
	not_ok "bash completion installed in $completions_dir"
fi

unit=$destdir/$unit_dir/virt-mirrord.service
if grep -qx "Type=$service_type" "$unit"; then
	ok "the unit is Type=$service_type"
else
	not_ok "the unit is Type=$service_type"
fi

# the unit as installed, its ExecStart the installed daemon
verify() {
	unshare -m --propagation private sh -c \
		'mount --bind "$1" "$2" && exec systemd-analyze verify "$3"' \
		sh "$destdir/$sbindir" "$sbindir" "$1" 2>&1
}
if ! command -v systemd-analyze >/dev/null; then
	cannot "systemd-analyze not found (the systemd package)"
elif [ ! -d "$sbindir" ]; then
	cannot "$sbindir does not exist here: the installed daemon cannot be put at its ExecStart path"
elif ! unshare -m --propagation private true 2>/dev/null; then
	cannot "cannot make a mount namespace here (needs root): the installed daemon cannot be put at its ExecStart path"
else
	out=$(verify "$unit")
	status=$?
	# problems of other units on the machine are theirs
	ours=$(grep -F virt-mirrord <<<"$out")
	if [ $status -eq 0 ] && [ -z "$ours" ]; then
		ok "systemd-analyze verify passes on the installed unit"
	else
		not_ok "systemd-analyze verify passes on the installed unit (status $status)"
	fi
	echo "$out" | sed 's/^/# /'
	# and it would see a broken one
	broken=$destdir/virt-mirrord-broken.service
	sed 's/^Type=.*/Type=bogus/' "$unit" >"$broken"
	if grep -qF virt-mirrord-broken <<<"$(verify "$broken")"; then
		ok "systemd-analyze verify reports a broken copy of the unit"
	else
		not_ok "systemd-analyze verify reports a broken copy of the unit"
	fi
fi

echo "1..$n"
[ "$failed" -eq 0 ]
