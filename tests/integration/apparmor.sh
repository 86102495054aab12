# The AppArmor profile (scripts/apparmor/sbxtop): `make install DESTDIR=...` puts
# it in DESTDIR/etc/apparmor.d/sbxtop with the installed sbxtop-core's path and
# does not load it; apparmor_parser accepts it (-Q -K: parse only, no kernel, no
# cache); scripts/apparmor.sh refuses a path AppArmor would read as a pattern.
. "$(dirname "$0")/../lib.sh"

if ! command -v apparmor_parser >/dev/null 2>&1; then
	not_ok "apparmor_parser is needed (Debian's apparmor package; scripts/deps.sh --test installs it)"
	exit 1
fi
D="$T/dest"
if env -u MAKEFLAGS -u MAKELEVEL make -s -C "$TOP" BUILD="$BUILD" DESTDIR="$D" PREFIX=/usr \
    install > "$T/install.log" 2>&1; then
	ok "make install DESTDIR=... PREFIX=/usr"
else
	not_ok "make install DESTDIR=... PREFIX=/usr"
	sed 's/^/# /' "$T/install.log" | tail -n 20
	exit 1
fi
P="$D/etc/apparmor.d/sbxtop"
check "the profile is installed in DESTDIR/etc/apparmor.d/sbxtop" test -f "$P"
like "... for the installed sbxtop-core" "$(cat "$P")" '@\{sbxtop_core\} = "/usr/lib/sbxtop/sbxtop-core"'
like "... attached to it, unconfined but for userns" "$(cat "$P")" \
	'profile sbxtop-core @\{sbxtop_core\} flags=\(unconfined\) \{'
like "... granting userns" "$(grep -x '  userns,' "$P")" 'userns,'
like "... under AppArmor 4's ABI" "$(grep '^abi' "$P")" '^abi <abi/4\.0>,$'
if grep -q 'loaded' "$T/install.log"; then
	not_ok "a DESTDIR install does not load it"; sed 's/^/# /' "$T/install.log"
else
	ok "a DESTDIR install does not load it"
fi

# apparmor_parser 4 knows `userns` and abi/4.0; Debian 12's 3.0 knows neither, so
# there everything else is parsed: the same file with those two lines left out.
ver=$(apparmor_parser --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -n 1)
if [ "${ver:-0}" -ge 4 ]; then
	what="apparmor_parser $ver parses the profile"
	cp "$P" "$T/check"
else
	what="apparmor_parser ${ver:-?} parses the profile (less userns and abi 4.0, which need 4)"
	sed -e 's|^abi <abi/4\.0>,$|abi <abi/3.0>,|' -e '/^  userns,$/d' "$P" > "$T/check"
fi
if apparmor_parser -Q -K "$T/check" > "$T/parse.log" 2>&1; then
	ok "$what"
else
	not_ok "$what"; sed 's/^/# /' "$T/parse.log"
fi
# The parser is not a rubber stamp: a broken rule fails.
sed 's|^  include if exists|  include if exist|' "$T/check" > "$T/broken"
if apparmor_parser -Q -K "$T/broken" > /dev/null 2>&1; then
	not_ok "... and rejects a broken copy"
else
	ok "... and rejects a broken copy"
fi

# A build tree's profile (sudo make apparmor writes one like it).
out=$("$TOP/scripts/apparmor.sh" sbxtop-core-test "$T/my tree/build/sbxtop-core" "$T/ad/sbxtop-build" --no-load 2>&1)
like "a build tree's profile is written" "$out" 'wrote .*/ad/sbxtop-build \(profile sbxtop-core-test'
like "... with its path quoted" "$(cat "$T/ad/sbxtop-build")" "@\{sbxtop_core\} = \"$T/my tree/build/sbxtop-core\""
like "... and its own name" "$(cat "$T/ad/sbxtop-build")" 'profile sbxtop-core-test @\{sbxtop_core\}'
out=$("$TOP/scripts/apparmor.sh" x "$T/a*b/sbxtop-core" "$T/ad/glob" --no-load 2>&1)
rc=$?
like "a path with a pattern character is refused" "$rc:$out" '^1:.*cannot carry'
check "... and nothing written" test ! -e "$T/ad/glob"
like "make apparmor installs this tree's profile under /etc/apparmor.d and loads it" \
	"$(env -u MAKEFLAGS -u MAKELEVEL make -s -n -C "$TOP" BUILD="$BUILD" apparmor 2>&1 | tr -d '\\\n')" \
	"scripts/apparmor.sh sbxtop-core-[0-9]+ $BUILD/sbxtop-core +/etc/apparmor.d/sbxtop-build-[0-9]+\$"
out=$("$TOP/scripts/apparmor.sh" x "$T/a&b/sbxtop-core" "$T/ad/amp" --no-load 2>&1)
like "... and so is one with & (sed would mangle it)" "$?:$out" '^1:.*cannot carry'
out=$("$TOP/scripts/apparmor.sh" x /usr/lib/sbxtop/sbxtop-core "$T/no-apparmor-here/sbxtop" 2>&1)
like "an install where there is no apparmor.d: said, skipped, the install goes on" "$?:$out" \
	"^0:apparmor: no $T/no-apparmor-here here \\(AppArmor is not installed\\): profile not installed"
check "... and nothing created" test ! -e "$T/no-apparmor-here"
out=$(env -u MAKEFLAGS -u MAKELEVEL make -s -C "$TOP" BUILD="$T/nobuild" apparmor 2>&1); rc=$?
like "make apparmor before a build: refused, nothing built (it runs under sudo)" "$rc:$out" \
	"^2:sbxtop: no $T/nobuild/sbxtop-core: run make first"
check "... and no build directory made" test ! -e "$T/nobuild"
done_testing
