# shellcheck shell=bash
# Sourced by the checks that build a fresh Debian root of the host's release
# with mmdebstrap (tests/fresh-install, tests/package). The sourcing script
# defines say and die first.
#
# fresh_root_begin PREFIX KEEP: checks that mmdebstrap can run (root, the
# tool, the release's codename in fresh_codename), makes the work directory
# fresh_work with fresh_root to be built in it, and removes both on exit,
# after a failure or Ctrl-C too (unless KEEP is 1 and all went well).
# fresh_root_sources: the host's apt sources into fresh_sources (files);
# fresh_root_acquire: its download settings into $fresh_work/acquire.conf.

fresh_root_begin() {
	local prefix=$1
	fresh_keep=$2
	[ "$(id -u)" -eq 0 ] || die "must run as root (try: sudo $0)"
	command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap not found (scripts/install-deps installs it)"
	fresh_codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$fresh_codename" ] || die "cannot tell the Debian release from /etc/os-release"
	fresh_work=$(mktemp -d "${TMPDIR:-/var/tmp}/$prefix-XXXXXX")
	fresh_root="$fresh_work/root"
	trap fresh_root_cleanup EXIT
	trap 'say "interrupted"; exit 130' INT TERM
}

# Unmounts whatever is still mounted below the root (a hook interrupted
# while mmdebstrap had /proc, /sys or /dev bound there), deepest first, then
# removes the directory without ever crossing into another file system.
fresh_root_cleanup() {
	local status=$? m
	trap - EXIT INT TERM
	if [ "$fresh_keep" -eq 1 ] && [ $status -eq 0 ]; then
		say "root kept in $fresh_root"
		exit $status
	fi
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk -v r="$fresh_work/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r)
	if awk -v r="$fresh_work/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		say "error: something is still mounted below $fresh_work; not removing it"
		exit 1
	fi
	rm -rf --one-file-system "$fresh_work"
	exit $status
}

# the host's sources, in whatever files and formats it has them; not the
# backports source that install-deps adds, since a fresh machine has none
fresh_root_sources() {
	local f
	fresh_sources=()
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$(basename "$f")" = virt-mirror-backports.sources ] && continue
		grep -qE '^[[:space:]]*(deb|Types:)' "$f" || continue
		fresh_sources+=("$f")
	done
	[ ${#fresh_sources[@]} -gt 0 ] || die "the host has no apt sources to build the root from"
}

# the host's download settings (proxies, snapshot validity, languages ...)
fresh_root_acquire() {
	apt-config dump Acquire >"$fresh_work/acquire.conf"
}

# fresh_cache_link FROM TO: a shell command that puts the packages (*.deb) of
# the directory FROM into TO, those TO lacks: as hard links where both are on
# one file system (apt never rewrites a downloaded package), else as copies.
# The paths are quoted here; "$1" in them is left to mmdebstrap's hook shell.
fresh_cache_link() {
	local from=$1 to=$2 find
	find="find $from -maxdepth 1 -name '*.deb' -exec"
	echo "$find cp -ln -t $to {} + 2>/dev/null || $find cp -pn -t $to {} +"
}

# fresh_root_args CACHE: the options of mmdebstrap that every check gives it,
# into fresh_args: a minimal root built as root from the host's settings,
# with the downloaded packages of CACHE put into its apt cache first, and
# dpkg not syncing each file it unpacks (force-unsafe-io: the root is thrown
# away, never booted); and into fresh_cache_out the hook that puts the
# packages the root downloaded back into CACHE, for the check to give after
# it installed its own
fresh_root_args() {
	local cache=$1 quoted
	mkdir -p "$cache"
	quoted=$(printf '%q' "$cache")
	fresh_args=(--variant=minbase --mode=root --format=directory
		--aptopt="$fresh_work/acquire.conf"
		--dpkgopt=force-unsafe-io
		--skip=essential/unlink
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives/'
		--setup-hook="$(fresh_cache_link "$quoted" '"$1"/var/cache/apt/archives')")
	fresh_cache_out=--customize-hook="$(fresh_cache_link '"$1"/var/cache/apt/archives' "$quoted")"
}
