# Remote hosts over SSH, on a loopback sshd: create-to-ready and an exec round trip
# on the ssh backend beside the same on local ns, and beside OpenSSH's own client
# running `true` on the host (a fresh connection each, as each sbxtop process makes).
# Needs root (the sshd logs in as root with a generated key) and openssh-server.
set -eu
BUILD=${BUILD:-build}
N=${BENCH_SSH_N:-10}
if [ "$(id -u)" -ne 0 ] || [ ! -x /usr/sbin/sshd ]; then
	echo "ssh backend: left out (needs root and /usr/sbin/sshd)"
	exit 0
fi
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache" HOME="$T/home"
mkdir -p -m 0700 "$XDG_RUNTIME_DIR" "$HOME/.ssh" /run/sshd
unset SSH_AUTH_SOCK
S="$BUILD/sbxtop"
ids=""
sshd=""
trap 'for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; [ -n "$sshd" ] && kill $sshd; rm -rf "$T"' EXIT

now_us() { echo $(( $(date +%s%N) / 1000 )); }
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.2f %10.2f", p50/1000, p99/1000}'; }

ssh-keygen -q -t ed25519 -N '' -f "$T/id"
ssh-keygen -q -t ed25519 -N '' -f "$T/hk"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$T/sshd.conf" <<EOC
Port $port
ListenAddress 127.0.0.1
HostKey $T/hk
AuthorizedKeysFile $T/id.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
SetEnv XDG_STATE_HOME=$T/remote/state XDG_CACHE_HOME=$T/remote/cache XDG_DATA_HOME=$T/remote/data
LogLevel ERROR
EOC
/usr/sbin/sshd -D -f "$T/sshd.conf" & sshd=$!
sleep 0.3
"$S" host add loop "ssh://root@127.0.0.1:$port" --identity "$T/id" --accept-new >/dev/null
# Warm both: the bundle copy and the image caches.
for h in "" "--host loop"; do
	id=$("$S" create $h </dev/null); "$S" destroy "$id" >/dev/null
done

: > "$T/c_ns"; : > "$T/c_ssh"; : > "$T/e_ns"; : > "$T/e_ssh"; : > "$T/e_peer"
for i in $(seq "$N"); do
	t=$(now_us); id=$("$S" create </dev/null); echo $(( $(now_us) - t )) >> "$T/c_ns"; ids="$ids $id"
	t=$(now_us); id=$("$S" create --host loop </dev/null); echo $(( $(now_us) - t )) >> "$T/c_ssh"; ids="$ids $id"
done
set -- $ids
for i in $(seq "$N"); do
	t=$(now_us); "$S" exec "$1" -- true; echo $(( $(now_us) - t )) >> "$T/e_ns"
	t=$(now_us); "$S" exec "$2" -- true; echo $(( $(now_us) - t )) >> "$T/e_ssh"
	t=$(now_us)
	ssh -q -i "$T/id" -p "$port" -o UserKnownHostsFile="$HOME/.ssh/known_hosts" \
		-o BatchMode=yes root@127.0.0.1 true
	echo $(( $(now_us) - t )) >> "$T/e_peer"
done
printf '%-48s %10s %10s\n' "ssh backend, loopback sshd ($N each)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop create, to a ready agent: local ns" "$(stats "$T/c_ns")"
printf '  %-46s %s\n' "sbxtop create --host (ssh, bundle cached)" "$(stats "$T/c_ssh")"
printf '  %-46s %s\n' "sbxtop exec ID -- true: local ns" "$(stats "$T/e_ns")"
printf '  %-46s %s\n' "sbxtop exec ID -- true: ssh host" "$(stats "$T/e_ssh")"
printf '  %-46s %s\n' "peer: ssh -p PORT root@127.0.0.1 true" "$(stats "$T/e_peer")"
