#!/bin/sh
# Write the AppArmor profile for one sbxtop-core binary and load it.
#   scripts/apparmor.sh NAME CORE FILE [--no-load]
# NAME is the profile's name (sbxtop-core for an installed one), CORE the
# absolute path of the binary it grants `userns` to, FILE where it goes
# (/etc/apparmor.d/...).  Loaded with apparmor_parser -r unless --no-load (a
# DESTDIR install) or there is no apparmor_parser (AppArmor is not in use).
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
*[\"*?[{}^\\]*|*"
"*) echo "apparmor: the path $core holds a character AppArmor reads as a pattern" \
	"(\" * ? [ { } ^ \\): build or install elsewhere" >&2; exit 1 ;;
esac
mkdir -p "$(dirname "$file")"
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
