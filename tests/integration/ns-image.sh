# The default ns image across a rebuild (a new sbxtop whose image differs): a
# sandbox made from the old image keeps its files, the old image is set aside
# rather than removed while a sandbox may sit on it, and gc removes it once no
# sandbox is left.
. "$(dirname "$0")/../lib.sh"

export HOME="$T/home" SBXTOP_STANDALONE=1
mkdir -p "$HOME"
sbx() { "$SBXTOP" "$@"; }
IMG="$XDG_DATA_HOME/sbxtop/images"

id1=$(sbx create 2> "$T/err")
case "$id1" in sbx-*) ok "a first create builds the image" ;; *) not_ok "create"; diag "$(cat "$T/err")"; exit 1 ;; esac
at_exit "$SBXTOP destroy $id1"
check "the image has its stamp" test -s "$IMG/host/.sbxtop-image"
# What an older sbxtop would have left: another version in the stamp.
sed -i 's/^sbxtop-image [0-9]*/sbxtop-image 0/' "$IMG/host/.sbxtop-image"
id2=$(sbx create 2> "$T/err")
case "$id2" in sbx-*) ok "a create after the stamp changed rebuilds it" ;; *) not_ok "second create"; diag "$(cat "$T/err")" ;; esac
at_exit "$SBXTOP destroy $id2"
like "the image was rebuilt" "$(cat "$IMG/host/.sbxtop-image")" '^sbxtop-image [1-9]'
old=$(ls -d "$IMG"/.host.old.* 2> /dev/null | head -1)
check "the old image is set aside, not removed" test -n "$old" -a -f "$old/etc/passwd"
like "the first sandbox still has its /etc" "$(sbx exec -n "$id1" -- 'grep -c . /etc/passwd; ls /etc | wc -l')" '^[1-9]'
sbx gc > /dev/null 2>&1
check "gc keeps it while sandboxes run" test -d "$old"
sbx destroy "$id1" && sbx destroy "$id2"
out=$(sbx gc 2>&1); rc=$?
is "gc: exit 0" "$rc" 0
check "gc removed the old image once no sandbox was left" test ! -e "$old"
check "the current image stays" test -s "$IMG/host/.sbxtop-image"
done_testing
