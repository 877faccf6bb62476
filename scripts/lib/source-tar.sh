# shellcheck shell=bash
# Sourced by the scripts that work on a copy of the source tree.
#
# vmr_source_tar REPO_ROOT TARBALL: the source tree as the working tree has
# it, into TARBALL: what git tracks and the new files it does not ignore;
# outside a checkout, everything but build trees
vmr_source_tar() {
	local repo_root=$1 tarball=$2
	if git -C "$repo_root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$repo_root" && git ls-files -z --cached --others --exclude-standard |
			tar --null --no-recursion -cf "$tarball" -T -)
	else
		tar -C "$repo_root" --exclude='./build*' --exclude=./.git -cf "$tarball" .
	fi
}
