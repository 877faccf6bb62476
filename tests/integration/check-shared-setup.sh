#!/bin/bash
# A program that sets its cluster up once, before its cases, run with etcd
# and etcdctl hidden from PATH: under REQUIRE_INTEGRATION=1 it must exit
# non-zero with one line naming the missing program (no case may skip);
# without it, every case skips and the program passes. TAP output.
#
#   check-shared-setup.sh PROGRAM...
set -uo pipefail

hidden="etcd etcdctl"
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

# PATH as it is, but a directory that holds a hidden program replaced by one of
# links to everything else in it
shadow=$(mktemp -d "${TMPDIR:-/tmp}/vmr-path-XXXXXX")
trap 'rm -rf "$shadow"' EXIT
IFS=: read -ra dirs <<<"$PATH"
not_hidden=()
for name in $hidden; do
	not_hidden+=(-not -name "$name")
done
path=
for i in "${!dirs[@]}"; do
	dir=${dirs[$i]}
	for name in $hidden; do
		if [ -e "$dir/$name" ]; then
			mkdir "$shadow/$i"
			find "$dir/" -mindepth 1 -maxdepth 1 "${not_hidden[@]}" -exec ln -s -t "$shadow/$i" {} +
			dir=$shadow/$i
			break
		fi
	done
	path=${path:+$path:}$dir
done
for name in $hidden; do
	if PATH=$path command -v "$name" >/dev/null; then
		echo "Bail out! $name is still in PATH"
		exit 1
	fi
done

for program in "$@"; do
	base=${program##*/}
	out=$(PATH=$path REQUIRE_INTEGRATION=1 "$program" 2>&1 >/dev/null)
	status=$?
	line="$base: etcd not found (REQUIRE_INTEGRATION=1 makes this a failure)"
	if [ "$status" -ne 0 ] && [ "$out" = "$line" ]; then
		ok "$base without etcd, REQUIRE_INTEGRATION=1: exit $status, one line naming etcd"
	else
		not_ok "$base without etcd, REQUIRE_INTEGRATION=1: exit $status, expected non-zero and '$line'"
		echo "$out" | sed 's/^/# /'
	fi

	out=$(PATH=$path REQUIRE_INTEGRATION=0 "$program" 2>/dev/null)
	status=$?
	cases=$(grep -c '^ok ' <<<"$out")
	skips=$(grep -c '^ok .* # SKIP' <<<"$out")
	others=$(grep -c '^not ok ' <<<"$out")
	if [ "$status" -eq 0 ] && [ "$cases" -gt 0 ] && [ "$skips" -eq "$cases" ] && [ "$others" -eq 0 ]; then
		ok "$base without etcd, REQUIRE_INTEGRATION=0: all $cases cases skip, exit 0"
	else
		not_ok "$base without etcd, REQUIRE_INTEGRATION=0: exit $status, $skips of $cases cases skipped, $others failed"
		echo "$out" | sed 's/^/# /'
	fi
done

echo "1..$n"
[ "$failed" -eq 0 ]
