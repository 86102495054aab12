# Copies between the host and an ns sandbox against what the sandbox (its user,
# its root) laid down: links out of the copied tree are not made on the host,
# a link at the destination is not written through, and a copy in does not
# follow a link at its top.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@" < /dev/null; }
as_user() { _id=$1; shift; "$SBXTOP" exec -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
as_root() { _id=$1; shift; "$SBXTOP" exec -n --root "$_id" -- "$@" 2> "$T/err"; rc=$?; }
at_exit '"$SBXTOP" serve --stop > /dev/null 2>&1'
destroy_left_at_exit

mkdir -p "$T/hostdir" "$T/out"
echo host-secret > "$T/hostdir/secret"
chmod 600 "$T/hostdir/secret"
a=$(sbx create --name copy-a --max-duration 600)
like "create a sandbox" "$a" '^sbx-'

for who in user root; do
	run=as_$who
	$run "$a" "mkdir -p /workspace/$who/sub && echo data > /workspace/$who/sub/f &&
	    ln -s $T/hostdir /workspace/$who/dist && ln -s sub/f /workspace/$who/alias &&
	    ln -s ../../../etc /workspace/$who/sub/up && echo MADE" > "$T/out.txt"
	is "the sandbox's $who lays down links in a tree" "$(cat "$T/out.txt")" MADE
	sbx cp "$a:/workspace/$who" "$T/out/" > "$T/cp.out" 2> "$T/cp.err"; rc=$?
	is "cp of the tree out: exit 0 ($who)" "$rc" 0
	is "its files arrive ($who)" "$(cat "$T/out/$who/sub/f" 2>&1)" data
	check "a link out of the tree is not made on the host ($who)" test ! -e "$T/out/$who/dist" -a ! -L "$T/out/$who/dist"
	check "nor one that climbs out with .. ($who)" test ! -L "$T/out/$who/sub/up"
	like "and the copy says so ($who)" "$(cat "$T/cp.err")" 'dist.*(outside|leaves)'
	is "a link inside the tree is kept ($who)" "$(readlink "$T/out/$who/alias")" sub/f
	# The sandbox turns dist into a real directory; a refresh must not land in
	# the host directory even if an earlier tool had made the link.
	ln -s "$T/hostdir" "$T/out/$who/dist"
	$run "$a" "rm /workspace/$who/dist && mkdir /workspace/$who/dist && echo evil > /workspace/$who/dist/planted && echo RE" > /dev/null
	sbx cp "$a:/workspace/$who" "$T/out/" > /dev/null 2> "$T/cp2.err"
	check "a refresh never writes through a link under the destination ($who)" test ! -e "$T/hostdir/planted"
	rm -f "$T/out/$who/dist"
done

# The destination itself a link (left by an earlier copy): refused.
ln -s "$T/hostdir" "$T/out/user2"
as_user "$a" "mkdir -p /workspace/user2 && echo x > /workspace/user2/evil && echo M" > /dev/null
sbx cp "$a:/workspace/user2" "$T/out/" > /dev/null 2> "$T/cp3.err"; rc=$?
check "a copy out onto a link is refused (exit $rc)" test "$rc" -ne 0
check "and nothing reached the link's target" test ! -e "$T/hostdir/evil"
like "saying why" "$(cat "$T/cp3.err")" 'symlink'

# Copies in: a link at the top (one a sandbox laid down in an earlier copy
# out) is not followed to a host file.
ln -s "$T/hostdir/secret" "$T/out/config"
sbx cp "$T/out/config" "$a:/workspace/" > /dev/null 2> "$T/cp4.err"; rc=$?
check "cp in of a link at the top is refused (exit $rc)" test "$rc" -ne 0
as_user "$a" 'cat /workspace/config 2>&1; true' > "$T/out.txt"
check "the host file did not reach the sandbox's user" test -z "$(grep host-secret "$T/out.txt")"
like "saying why" "$(cat "$T/cp4.err")" 'symlink'
# ... nor a link to a host directory, whose files would all go in.
ln -s "$T/hostdir" "$T/out/confdir"
sbx cp "$T/out/confdir" "$a:/workspace/" > /dev/null 2> "$T/cp5.err"; rc=$?
check "cp in of a link to a directory is refused (exit $rc)" test "$rc" -ne 0
as_user "$a" 'cat /workspace/confdir/secret 2>&1; true' > "$T/out.txt"
check "the host directory's 0600 file did not reach the sandbox's user" \
    test -z "$(grep host-secret "$T/out.txt")"
done_testing
