#!/bin/sh
# Write the AppArmor profile for one sbxtop-core binary and load it.
#   scripts/apparmor.sh NAME CORE FILE [--no-load]
# NAME is the profile's name (sbxtop-core for an installed one), CORE the
# absolute path of the binary it grants `userns` to, FILE where it goes
# (/etc/apparmor.d/...).  Loaded with apparmor_parser -r unless --no-load (a
# DESTDIR install, which also creates FILE's directory) or there is no
# apparmor_parser (AppArmor is not in use).  Without --no-load, a missing
# directory (no AppArmor) or one we may not write (an install as a user, in
# PREFIX=~/.local) is said and skipped: the install goes on.
set -eu
[ $# -ge 3 ] || { echo "usage: scripts/apparmor.sh NAME CORE FILE [--no-load]" >&2; exit 2; }
name=$1 core=$2 file=$3 load=${4:-}
src=$(dirname "$0")/apparmor/sbxtop
case "$core" in
/*) ;;
*) echo "apparmor: $core is not an absolute path" >&2; exit 2 ;;
esac
# The path goes into the profile quoted; AppArmor would read these as globs.
case "$core" in
*[\"*?[{}^\\\&\|]*|*"
"*) echo "apparmor: the path $core holds a character the profile cannot carry" \
	"(AppArmor reads \" * ? [ { } ^ \\ as patterns; & | are refused too): build or install elsewhere" >&2; exit 1 ;;
esac
dir=$(dirname "$file")
if [ "$load" = --no-load ]; then
	mkdir -p "$dir"		# a package's tree (DESTDIR)
elif [ ! -d "$dir" ]; then
	echo "apparmor: no $dir here (AppArmor is not installed): profile not installed"
	exit 0
elif [ ! -w "$dir" ]; then
	echo "apparmor: $dir is not writable: profile not installed; where AppArmor" \
	    "restricts user namespaces (Ubuntu 23.10+), run as root:" \
	    "$0 $name '$core' $file" >&2
	exit 0
fi
sed -e "s|^@{sbxtop_core} = .*|@{sbxtop_core} = \"$core\"|" \
    -e "s|^profile sbxtop-core |profile $name |" \
    -e "s|<local/sbxtop-core>|<local/$name>|" "$src" > "$file.tmp"
chmod 0644 "$file.tmp"
mv "$file.tmp" "$file"
echo "apparmor: wrote $file (profile $name for $core)"
if [ "$load" = --no-load ]; then
	exit 0
fi
if ! command -v apparmor_parser >/dev/null 2>&1; then
	echo "apparmor: no apparmor_parser here: not loaded (AppArmor is not in use)"
	exit 0
fi
if [ ! -d /sys/kernel/security/apparmor ]; then
	echo "apparmor: AppArmor is not enabled in this kernel: not loaded"
	exit 0
fi
apparmor_parser -r "$file"
echo "apparmor: loaded $name"
