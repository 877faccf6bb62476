# bash completion for virt-mirror(1)
#
# The commands, their options and their arguments come from the CLI itself
# (`virt-mirror --help`, `virt-mirror COMMAND --help`); domain names, disks
# and job ids from the daemon (`virt-mirror __complete ...`), which waits at
# most a second for it and gives nothing when it is down.

# the commands: "attach", "policy check", ... one a line
_virt_mirror_commands()
{
	"$1" --help 2>/dev/null | awk '
		/^Commands:/ { on = 1; next }
		on && /^$/ { exit }
		on {
			sub(/^ +/, ""); split($0, part, /  +/); nw = split(part[1], w, " "); name = ""
			for (i = 1; i <= nw && w[i] ~ /^[a-z][a-z-]*$/; i++) name = name (name == "" ? "" : " ") w[i]
			print name
		}'
}

# names from the daemon: domains, disks DOMAIN, jobs
_virt_mirror_names()
{
	timeout 2 "$_vmr_cli" "${_vmr_connect[@]}" __complete "$@" 2>/dev/null
}

_virt_mirror()
{
	local cur prev words cword split
	_init_completion -s -n : || return

	local cli=${words[0]} i
	local _vmr_cli=$cli
	local -a _vmr_connect=()

	# the socket the command line names, for the daemon's names
	for ((i = 1; i < ${#words[@]} - 1; i++)); do
		case ${words[i]} in
		-c | --connect) _vmr_connect=(--connect "${words[i + 1]}") ;;
		--connect=*) _vmr_connect=("${words[i]}") ;;
		esac
	done

	case $prev in
	-c | --connect)
		_filedir
		return
		;;
	esac

	# the command: the first words after the global options that name one
	local commands cmd="" first
	commands=$(_virt_mirror_commands "$cli")
	local -i start=0
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-c | --connect) ((i++)) ;;
		-*) ;;
		*)
			first=${words[i]}
			start=i
			break
			;;
		esac
	done
	if ((start == 0)); then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--connect --json --help' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(awk '{ print $1 }' <<<"$commands" | sort -u)" -- "$cur"))
		fi
		return
	fi
	# a group ("policy") takes its command as the next word
	if grep -qx "$first [a-z-]*" <<<"$commands"; then
		if ((cword == start + 1)); then
			COMPREPLY=($(compgen -W "$(awk -v g="$first" '$1 == g { print $2 }' <<<"$commands")" -- "$cur"))
			return
		fi
		cmd="$first ${words[start + 1]}"
		((start++))
	else
		cmd=$first
	fi
	grep -qx "$cmd" <<<"$commands" || return

	# the command's usage and options, from its own --help
	local help usage
	# shellcheck disable=SC2086
	help=$("$cli" $cmd --help 2>/dev/null)
	usage=$(sed -n "s/^ *[^ ]* \[OPTION[^]]*\] $cmd *//p" <<<"$help" | head -n1)

	# an option that takes an argument: what its placeholder asks for
	local opt_arg=""
	if [[ $prev == -* ]]; then
		opt_arg=$(sed -n "s/^ *\(-., \)\{0,1\}${prev}=\([A-Z]*\).*/\2/p" <<<"$help" | head -n1)
	fi
	if [[ -n $opt_arg ]]; then
		_virt_mirror_argument "$opt_arg" ""
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' <<<"$help" |
			grep -oE -- '--[a-z-]+')" -- "$cur"))
		return
	fi

	# the positional arguments so far, options and their arguments left out
	local -a positional=()
	for ((i = start + 1; i < cword; i++)); do
		case ${words[i]} in
		--*=* | --json | --help | -h) ;;
		-c | --connect) ((i++)) ;;
		-*)
			if grep -qE "^ +(-., )?${words[i]}=" <<<"$help"; then
				((i++))
			fi
			;;
		*) positional+=("${words[i]}") ;;
		esac
	done

	# which placeholder of the usage this one is: "DOMAIN DISK DEST [DISK DEST ...]"
	local -a names=() repeat=()
	local word optional=false
	for word in $usage; do
		[[ $word == \[* ]] && optional=true
		word=${word//[\[\]]/}
		if [[ $word == ... ]]; then
			continue
		fi
		names+=("$word")
		$optional && repeat+=("$word")
	done
	local -i n=${#positional[@]}
	local name=""
	if ((n < ${#names[@]})); then
		name=${names[n]}
	elif [[ $usage == *...\]* ]] && ((${#repeat[@]} > 0)); then
		name=${repeat[(n - ${#names[@]}) % ${#repeat[@]}]}
	fi
	[[ $cmd == attach && $name == NAME ]] && return
	_virt_mirror_argument "$name" "${positional[0]-}"
}

# completes $cur as the placeholder $1; $2 is the command's first argument
_virt_mirror_argument()
{
	case $1 in
	DOMAIN | NAME | GLOB) COMPREPLY=($(compgen -W "$(_virt_mirror_names domains)" -- "$cur")) ;;
	DISK) [[ -n $2 ]] && COMPREPLY=($(compgen -W "$(_virt_mirror_names disks "$2")" -- "$cur")) ;;
	ID) COMPREPLY=($(compgen -W "$(_virt_mirror_names jobs)" -- "$cur")) ;;
	FORMAT) COMPREPLY=($(compgen -W 'raw qcow2' -- "$cur")) ;;
	MODE) COMPREPLY=($(compgen -W 'active write-blocking' -- "$cur")) ;;
	DIR) _filedir -d ;;
	DEST | FILE | PATH | SOCKET) _filedir ;;
	esac
}

complete -F _virt_mirror virt-mirror
