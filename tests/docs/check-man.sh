#!/bin/bash
# Renders each man page as a reader would (man -l, groff's warnings on) and
# checks that the pages name every command and option of the CLI, as its
# own help lists them, and every key of the policy, as the policy's key
# table lists them.
#
#   check-man.sh CLI COMPLETION POLICY_KEYS PAGE...
#
# COMPLETION is the bash completion script, whose reading of the CLI's help
# gives the commands.
#
# virt-mirror(1) must be among the PAGEs; the policy keys are looked for in
# virt-mirror-policy(5). TAP output, one test per check.
set -uo pipefail

cli=$1
completion=$2
policy_keys=$3
shift 3
pages=("$@")

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

if ! command -v man >/dev/null; then
	if [ "${REQUIRE_INTEGRATION:-}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - man not found (man-db; REQUIRE_INTEGRATION=1 makes this a failure)"
		exit 1
	fi
	echo "1..0 # SKIP man not found (install man-db)"
	exit 0
fi

# the text of each page, as man shows it 80 columns wide
declare -A text
for page in "${pages[@]}"; do
	name=$(basename "$page")
	warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	if [ -n "$warnings" ]; then
		not_ok "$name renders without warnings"
		echo "$warnings" | sed 's/^/# /'
	else
		ok "$name renders without warnings"
	fi
	# no hyphenation, so that every name stays whole on its line
	text[$name]=$(MANWIDTH=200 MAN_KEEP_FORMATTING= man -l "$page" 2>/dev/null | col -b)
	if [ -z "${text[$name]}" ]; then
		not_ok "$name renders to text"
	fi
done

cli_page=${text[virt-mirror.1]:-}
policy_page=${text[virt-mirror-policy.5]:-}
if [ -z "$cli_page" ] || [ -z "$policy_page" ]; then
	not_ok "virt-mirror.1 and virt-mirror-policy.5 are among the pages"
	echo "1..$n"
	exit 1
fi

# the commands, from `virt-mirror --help`, read as the bash completion reads them
# shellcheck disable=SC1090
. "$completion"
commands=$(_virt_mirror_commands "$cli")
if [ -z "$commands" ]; then
	not_ok "virt-mirror --help lists commands"
fi
while IFS= read -r cmd; do
	[ -n "$cmd" ] || continue
	# each command heads an entry of its own: the indented line starts with it
	if grep -qE "^ +${cmd}( |\$)" <<<"$cli_page"; then
		ok "virt-mirror(1) has the command '$cmd'"
	else
		not_ok "virt-mirror(1) has the command '$cmd'"
	fi
	# and every option its --help lists, --help and the global ones included
	# shellcheck disable=SC2086
	for opt in $("$cli" $cmd --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+'); do
		if grep -qF -- "$opt" <<<"$cli_page"; then
			ok "virt-mirror(1) has '$cmd $opt'"
		else
			not_ok "virt-mirror(1) has '$cmd $opt'"
		fi
	done
done <<<"$commands"

# the policy's keys: each heads its entry, "KEY = VALUE"
keys=$("$policy_keys")
if [ -z "$keys" ]; then
	not_ok "the policy lists its keys"
fi
for key in $keys; do
	if grep -qE "^ +${key} = " <<<"$policy_page"; then
		ok "virt-mirror-policy(5) has the key '$key'"
	else
		not_ok "virt-mirror-policy(5) has the key '$key'"
	fi
done

echo "1..$n"
[ "$failed" -eq 0 ]
