#!/bin/bash
# Completes a command line as bash does on Tab, with bash-completion and
# virt-mirror's completion loaded, and prints the candidates one a line.
#
#   complete.sh BASH_COMPLETION SCRIPT CLI WORD...
#
# BASH_COMPLETION is bash-completion's main script, SCRIPT virt-mirror's
# completion, CLI the virt-mirror to run; the WORDs are the command line,
# the last one the word being completed (may be empty). `complete.sh
# BASH_COMPLETION SCRIPT CLI -p` prints `complete -p virt-mirror` instead.
set -u
bash_completion=$1
script=$2
cli=$3
shift 3

# bash-completion wants an interactive-like shell; its options must be on
shopt -s extglob progcomp
# shellcheck disable=SC1090
. "$bash_completion"
# shellcheck disable=SC1090
. "$script"
PATH="$(dirname "$cli"):$PATH"

if [ "$1" = -p ]; then
	complete -p virt-mirror
	exit
fi
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMP_TYPE=9
COMPREPLY=()
func=$(complete -p virt-mirror | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
"$func" virt-mirror "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
