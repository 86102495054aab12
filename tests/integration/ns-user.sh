# The ns backend run by ordinary users, as most people run it: one with a
# subordinate id range in /etc/subuid and /etc/subgid (Debian's default for new
# users; the sandbox then has a `sandbox` user whose files belong to the range
# on the host), one without (the sandbox's root is the caller alone).  As each:
# create through the core server, exec (exit codes, streams, who runs it), cp
# both ways, suspend/resume, destroy, and gc of a sandbox whose init died; then
# no directory, process or registry entry may be left.  The users are made
# here (as root) and removed on exit, pass or fail, with their subuid lines.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root to create test users"; exit 0; fi
for t in useradd userdel runuser newuidmap newgidmap; do
	command -v "$t" > /dev/null || { echo "ok 1 # SKIP $t is not installed"; exit 0; }
done

J() { json_get "$1" "$2"; }
users_init

gone() {	# gone PID: no such process, or a zombie
	_st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$_st" ] || [ "$_st" = Z ] || [ "$_st" = X ]
}

# user_checks NAME RANGE: every check as user NAME; names start with "NAME:".
user_checks() {
	u=$1 range=$2 h="$U/$1"
	R() { "$U/run-$u" "$@"; }
	sdir="$h/state/sbxtop/sandboxes"
	if [ "$range" = yes ]; then
		sub=$(awk -F: -v u="$u" '$1 == u { print $2 }' /etc/subuid)
		check "$u: has a subordinate range ($sub)" test -n "$sub"
		want_uid=1000
	else
		check "$u: has no subordinate range" sh -c "! grep -q '^$u:' /etc/subuid"
		want_uid=0
	fi

	id=$(R "$S" create --name "$u-one" 2> "$T/err"); rc=$?
	case "$id" in sbx-*) ok "$u: create (exit $rc)" ;;
	*) not_ok "$u: create"; diag "$(cat "$T/err")"; return ;; esac
	pid=$(J "$(cat "$sdir/$id/backend.json")" 'd["pid"]')
	check "$u: its init runs as the user" test "$(stat -c %U "/proc/$pid")" = "$u"
	like "$u: ls shows it running" "$(R "$S" ls)" "$id .* ns +running"

	R "$S" exec -n "$id" -- 'echo out; echo err >&2; exit 3' > "$T/o" 2> "$T/e"; rc=$?
	is "$u: exec: exit code passed through" "$rc" 3
	is "$u: exec: stdout and stderr apart" "$(cat "$T/o")/$(cat "$T/e")" "out/err"
	R "$S" exec -n "$id" -- 'kill -9 $$'; rc=$?
	is "$u: exec: killed by signal 9: 128+9" "$rc" 137
	is "$u: exec runs as uid $want_uid inside" "$(R "$S" exec -n "$id" -- id -u)" "$want_uid"
	is "$u: exec --root runs as uid 0 inside" "$(R "$S" exec -n --root "$id" -- id -u)" 0
	is "$u: sudo id -u prints 0 inside" "$(R "$S" exec -n "$id" -- sudo id -u)" 0
	# Files the host user can neither enter nor unlink when a range owns them:
	# a 0700 tree in the home, a read-only directory in the workspace.
	R "$S" exec -n "$id" -- 'mkdir -p ~/private/deep && echo x > ~/private/deep/f &&
		chmod 700 ~/private && mkdir ro && touch ro/f && chmod 555 ro' > /dev/null
	R "$S" exec -n --root "$id" -- 'echo changed > /etc/sbxt-copied-up' > /dev/null
	if [ "$range" = yes ]; then
		is "$u: a file the sandbox user made belongs to the range on the host" \
			"$(stat -c %u "$sdir/$id/workspace/ro/f")" "$((sub + 999))"
	fi

	head -c 150000 /dev/urandom > "$T/in.bin"
	chmod 0644 "$T/in.bin"
	cp "$T/in.bin" "$h/in.bin" && chown "$u:" "$h/in.bin"
	R "$S" cp "$h/in.bin" "$id:in.bin"; rc=$?
	is "$u: cp in: exit 0" "$rc" 0
	is "$u: cp in: same sha256 inside" "$(R "$S" exec -n "$id" -- sha256sum in.bin | cut -d' ' -f1)" \
		"$(sha256sum < "$T/in.bin" | cut -d' ' -f1)"
	R "$S" exec -n "$id" -- 'mkdir -p outdir && cat in.bin in.bin > outdir/two && echo hi > outdir/t'
	R "$S" cp "$id:outdir" "$h/back"; rc=$?
	is "$u: cp out (a directory): exit 0" "$rc" 0
	is "$u: cp out: the file came back whole" "$(sha256sum < "$h/back/two" | cut -d' ' -f1)" \
		"$(cat "$T/in.bin" "$T/in.bin" | sha256sum | cut -d' ' -f1)"
	is "$u: cp out: it belongs to the user on the host" "$(stat -c %U "$h/back/two")" "$u"

	R "$S" suspend "$id"; rc=$?
	is "$u: suspend: exit 0" "$rc" 0
	is "$u: ls says suspended" "$(J "$(R "$S" ls --json)" "[s['state'] for s in d if s['id'] == '$id'][0]")" suspended
	R "$S" resume "$id"; rc=$?
	is "$u: resume: exit 0" "$rc" 0
	is "$u: exec after resume" "$(R "$S" exec -n "$id" -- echo back)" back

	R "$S" destroy "$id" 2> "$T/err"; rc=$?
	is "$u: destroy: exit 0" "$rc" 0
	[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
	check "$u: destroy: the init is gone" gone "$pid"
	check "$u: destroy: the directory is gone" test ! -e "$sdir/$id"
	is "$u: destroy: not listed any more" "$(J "$(R "$S" ls --json)" "[s['id'] for s in d]")" "[]"

	# gc: a sandbox whose init died, leaving files of the range behind.
	id2=$(R "$S" create --name "$u-two" 2> "$T/err")
	case "$id2" in sbx-*) ok "$u: a second create" ;;
	*) not_ok "$u: a second create"; diag "$(cat "$T/err")"; return ;; esac
	pid2=$(J "$(cat "$sdir/$id2/backend.json")" 'd["pid"]')
	R "$S" exec -n "$id2" -- 'mkdir -p ~/p/q && touch ~/p/q/f && chmod 700 ~/p'
	R kill -9 "$pid2"
	# Gone once its last thread is: the pid namespace's teardown takes a while.
	for _i in $(seq 100); do
		out=$(R "$S" ls 2> /dev/null)
		printf '%s' "$out" | grep -q "$id2 .* terminated" && break
		sleep 0.1
	done
	like "$u: its init killed: ls says terminated" "$out" "$id2 .* terminated"
	out=$(R "$S" gc 2>&1); rc=$?
	is "$u: gc: exit 0" "$rc" 0
	like "$u: gc removed its leftovers and its record" "$out" 'removed 1 leftover, dropped 1 record'
	check "$u: gc: the directory is gone" test ! -e "$sdir/$id2"
	is "$u: gc: the registry is empty" "$(J "$(cat "$h/state/sbxtop/sandboxes.json")" \
		"len(d['sandboxes'])")" 0

	R "$S" serve --stop > /dev/null 2>&1
	for _i in $(seq 100); do [ -z "$(user_pids "$u")" ] && break; sleep 0.05; done
	is "$u: no process of the user is left" "$(user_pids "$u" | tr '\n' ' ')" ""
	if [ "$range" = yes ]; then
		left=$(ps -e -o uid= | awk -v a="$sub" '$1 >= a && $1 < a + 65536' | wc -l)
		is "$u: no process of its range is left" "$left" 0
	fi
	is "$u: nothing left under sandboxes/" "$(ls -A "$sdir" 2>&1)" ""
}

a="sbxt-$$-a"
b="sbxt-$$-b"
if user_make "$a" yes; then ok "made user $a (with a range)"; user_checks "$a" yes
else not_ok "make user $a"; fi
if user_make "$b" no; then ok "made user $b (without a range)"; user_checks "$b" no
else not_ok "make user $b"; fi
done_testing
