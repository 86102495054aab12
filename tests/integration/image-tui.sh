# The console and OCI images, in a real terminal (tmux), on the core server:
# `c` with image=REF creates a sandbox from an image of a registry on
# loopback (pulled by that create), the detail pane's title names the image,
# Info shows its reference and id, and a shell in it is the image's.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (umoci keeping owners)"; exit 0; fi
command -v tmux > /dev/null 2>&1 || { echo "ok 1 # SKIP tmux is not installed"; exit 0; }
oci_need
export HOME="$T/home" TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8
mkdir -p "$HOME"
destroy_left_at_exit

registry_with_marker team/tool:7 from-the-image

tmux_start
tmux_run 140 32 "$SBXTOP"
check "the console starts on the core server" tmux_wait '^ sbxtop [0-9.]+ .*core: local' 15
tmux_keys c
check "c asks for the new sandbox" tmux_wait 'create' 5
tmux_keys "imgweb image=$REG/team/tool:7" Enter
if tmux_wait "imgweb +ns .*running" 60; then
	ok "c with image=REF creates a sandbox from the image (pulled on the way)"
else
	not_ok "c with image=REF creates a sandbox from the image"; tmux_screen | sed 's/^/# /' | tail -8
fi
check "the detail pane's title names the image" tmux_wait "imgweb .* ns .* tool:7 .* running" 10
id=$("$SBXTOP" ls | awk '$2 == "imgweb" { print $1 }')
is "...it is the image's: its file is there" "$("$SBXTOP" exec "$id" -- cat /etc/marker)" "from-the-image"
for _i in $(seq 8); do tmux_keys Tab; tmux_wait '\[Info\]' 1 && break; done
check "Info shows its reference and id" tmux_wait "image: *$REG/team/tool:7 \\(sha256:[0-9a-f]{12}\\)" 10
tmux_keys q
"$SBXTOP" destroy "$id" > /dev/null 2>&1
done_testing
