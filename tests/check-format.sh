#!/bin/bash
# Fails, naming the files, when a C source differs from what clang-format
# makes of it with the repository's .clang-format.
#   usage: check-format.sh [SOURCE_ROOT]
# Without clang-format the check is skipped (exit 77), unless
# REQUIRE_INTEGRATION=1 asks for every prerequisite to be there.
set -euo pipefail

root=${1:-$(dirname "$(readlink -f "$0")")/..}
cd "$root"

if ! command -v clang-format >/dev/null 2>&1; then
	echo "clang-format not found"
	[ "${REQUIRE_INTEGRATION:-0}" = 1 ] && exit 1
	exit 77
fi

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# tracked and new files, not what .gitignore hides (build directories)
	while IFS= read -r -d '' f; do
		# a tracked file deleted in the work tree is still listed
		[ -f "$f" ] && files+=("$f")
	done < <(git ls-files -z -co --exclude-standard -- '*.c' '*.h')
else
	# meson build directories, whatever their names, hold generated files
	prune=(-path ./.git -o -path ./subprojects)
	while IFS= read -r -d '' d; do
		prune+=(-o -path "${d%/meson-private}")
	done < <(find . -path ./.git -prune -o -type d -name meson-private -print0)
	while IFS= read -r -d '' f; do
		files+=("$f")
	done < <(find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print0)
fi

if [ ${#files[@]} -eq 0 ]; then
	echo "no C files found under $PWD"
	exit 1
fi

# one run over all files; each violation is reported as FILE:LINE:COL: ...
if out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
	echo "${#files[@]} files formatted"
	exit 0
fi
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: [a-z]*: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [ ${#bad[@]} -eq 0 ]; then
	# not a formatting problem: a broken .clang-format, an unreadable file
	echo "clang-format failed:"
	echo "$out"
	exit 1
fi
echo "not formatted as .clang-format asks (${#bad[@]} of ${#files[@]} files):"
printf '  %s\n' "${bad[@]}"
echo "fix with: clang-format -i FILE..."
exit 1
