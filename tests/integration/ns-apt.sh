# Packages and sudo in the default ns image: the sandbox's root installs
# packages (apt-get install of a local .deb, dpkg -i) into its own copy-on-write
# dpkg database, and the sandbox user becomes that root with `sudo`, which asks
# the agent; the host's package state stays as it was (checksums before and
# after).  The packages are built here with dpkg-deb: no network is needed.
. "$(dirname "$0")/../lib.sh"

for t in dpkg-deb dpkg apt-get; do
	command -v "$t" > /dev/null || { echo "ok 1 # SKIP $t is not installed (not a Debian host)"; exit 0; }
done
J() { json_get "$1" "$2"; }
export HOME="$T/home"
mkdir -p "$HOME"
sbx() { "$SBXTOP" "$@"; }
P=sbxt-pkg-$$

# mkdeb NAME: a package with one file, /usr/share/NAME/hello.
mkdeb() {
	d="$T/deb-$1"
	mkdir -p "$d/DEBIAN" "$d/usr/share/$1"
	printf 'Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: sbxtop tests <tests@example.invalid>\nDescription: made by the sbxtop tests\n' \
		"$1" > "$d/DEBIAN/control"
	echo "hello from $1" > "$d/usr/share/$1/hello"
	dpkg-deb --root-owner-group --build "$d" "$T/$1.deb" > /dev/null
}
mkdeb "$P-apt" && mkdeb "$P-dpkg" && mkdeb "$P-sudo"
check "three packages built with dpkg-deb" test -s "$T/$P-apt.deb" -a -s "$T/$P-dpkg.deb" -a -s "$T/$P-sudo.deb"

host_state() { sha256sum /var/lib/dpkg/status; ls -l --time-style=+%s.%N /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock 2>&1; ls /var/lib/dpkg/info | wc -l; }
before=$(host_state)

id=$(sbx create 2> "$T/err")
case "$id" in sbx-*) ok "create" ;; *) not_ok "create"; diag "$(cat "$T/err")"; exit 1 ;; esac
at_exit "$SBXTOP destroy $id"
dir="$XDG_STATE_HOME/sbxtop/sandboxes/$id"
for p in apt dpkg sudo; do sbx cp "$T/$P-$p.deb" "$id:$p.deb"; done
like "the sandbox lists the host's packages (dpkg -l)" "$(sbx exec -n "$id" -- dpkg -l dpkg | tail -1)" '^ii +dpkg '

# As the sandbox's root (exec --root).
sbx exec -n --root "$id" -- 'apt-get install -y ./apt.deb' > "$T/o" 2>&1; rc=$?
is "apt-get install -y ./x.deb as the sandbox's root: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(tail -5 "$T/o")"
like "dpkg -l inside lists it" "$(sbx exec -n "$id" -- dpkg -l "$P-apt" 2>&1 | tail -1)" "^ii +$P-apt +1.0"
is "its file is in place" "$(sbx exec -n "$id" -- cat "/usr/share/$P-apt/hello")" "hello from $P-apt"
sbx exec -n --root "$id" -- 'dpkg -i dpkg.deb' > "$T/o" 2>&1; rc=$?
is "dpkg -i as the sandbox's root: exit 0" "$rc" 0
like "dpkg -s inside says installed" "$(sbx exec -n "$id" -- dpkg -s "$P-dpkg" 2>&1)" 'Status: install ok installed'
check "the change is in the sandbox's own layer" grep -q "^Package: $P-dpkg" "$dir/ovl/var-lib-dpkg/upper/status"

# As the sandbox user, through sudo.
is "the sandbox user is not root" "$(sbx exec -n "$id" -- id -u)" 1000
is "sudo is the image's" "$(sbx exec -n "$id" -- 'command -v sudo')" /usr/local/bin/sudo
is "sudo id -u prints 0" "$(sbx exec -n "$id" -- sudo id -u)" 0
sbx exec -n "$id" -- 'sudo apt-get install -y ./sudo.deb' > "$T/o" 2>&1; rc=$?
is "sudo apt-get install -y ./x.deb as the sandbox user: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(tail -5 "$T/o")"
like "dpkg -l lists what sudo installed" "$(sbx exec -n "$id" -- dpkg -l "$P-sudo" 2>&1 | tail -1)" "^ii +$P-sudo "
is "sudo: the command's exit status" "$(sbx exec -n "$id" -- 'sudo sh -c "exit 7"; echo $?')" 7
is "sudo: killed by a signal: 128+N" "$(sbx exec -n "$id" -- 'sudo sh -c "kill -9 \$\$"; echo $?')" 137
like "sudo: an unknown command" "$(sbx exec -n "$id" -- 'sudo no-such-cmd-x 2>&1; echo "rc=$?"' | tr '\n' ' ')" \
	'no-such-cmd-x: command not found.*rc=1'
is "sudo: stdin, cwd and VAR=value reach the command" \
	"$(sbx exec -n "$id" -- 'cd /tmp && echo in | sudo GREETING=hi sh -c "cat; pwd; echo \$GREETING \$SUDO_USER"')" \
	"$(printf 'in\n/tmp\nhi sandbox')"
is "sudo: the caller's environment stays out without -E" \
	"$(sbx exec -n --env SECRETISH=1 "$id" -- 'sudo sh -c "echo \${SECRETISH:-unset}"; sudo -E sh -c "echo \${SECRETISH:-unset}"')" \
	"$(printf 'unset\n1')"
like "sudo -u someone-else is refused" "$(sbx exec -n "$id" -- 'sudo -u sandbox id 2>&1; echo "rc=$?"' | tr '\n' ' ')" 'root only.*rc=1'
is "sudo: a signal to sudo reaches the command" \
	"$(sbx exec -n "$id" -- 'sudo sleep 41 & sleep 0.5; kill -INT $!; wait $!; echo $?; sleep 0.3; pgrep -x sleep | wc -l')" \
	"$(printf '130\n0')"
is "sudo: a sudo killed takes its command along" \
	"$(sbx exec -n "$id" -- 'sudo sleep 42 & sleep 0.5; kill -9 $!; for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -x sleep > /dev/null || break; sleep 0.2; done; pgrep -x sleep | wc -l')" 0
sbx exec -n "$id" -- "sudo sh -c 'echo x > /usr/bin/$P-marker && echo x > /etc/$P-marker'"; rc=$?
is "sudo: the sandbox's root writes over /usr and /etc inside" "$rc" 0
check "and the host's /usr/bin and /etc have none of it" test ! -e "/usr/bin/$P-marker" -a ! -e "/etc/$P-marker"
like "the agent's log names each sudo" "$(cat "$dir/run/agent.log")" 'sudo: sandbox \(uid 1000\) runs id -u as root'

# Outside any sandbox nothing answers (as an ordinary user: root just runs it).
runuser -u nobody -- "$BUILD/agent-bundle/sbxtop-agent" --sudo id -u > "$T/o" 2> "$T/e"; rc=$?
check "sudo on the host reaches nothing (exit $rc)" test "$rc" -eq 1 -a ! -s "$T/o"
like "and says why" "$(cat "$T/e")" 'cannot reach this sandbox.s agent'

after=$(host_state)
is "the host's dpkg database, locks and info/ are untouched" "$after" "$before"
check "the host does not have the packages" sh -c "! dpkg -s $P-apt $P-dpkg $P-sudo > /dev/null 2>&1"
check "the host has no file of them" test ! -e "/usr/share/$P-apt" -a ! -e "/usr/share/$P-sudo"

sbx destroy "$id"; rc=$?
is "destroy: exit 0" "$rc" 0
check "destroy: the directory is gone" test ! -e "$dir"
done_testing
