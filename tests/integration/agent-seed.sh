# POST /v1/seal and /v1/reseed (the qemu backend's snapshots), and the checks
# of POST /v1/claim (warm pools): a sealed agent
# lets nobody in, not even with its own secret; reseed installs only what the
# seed disk holds, needs no secret, and a bad seed changes nothing.  The seed
# here is a regular file (in a guest it is the seed disk); no seed says
# "restored", so the host's clock and hostname are never touched.
. "$(dirname "$0")/../lib.sh"

# seed FILE SECRET: a 4 KiB seed as the qemu backend writes it.
seed() {
	python3 -c 'import sys
d = ("SBXTOP-SEED\nsecret=%s\ndeadline=0\nidle=0\nhostname=x\nrestored=0\n" % sys.argv[2]).encode()
open(sys.argv[1], "wb").write(d + b"\0" * (4096 - len(d)))' "$1" "$2"
}
# code SECRET METHOD PATH: the HTTP status.
code() { curl -s --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -X "$2" -H "X-Sandbox-Secret: $1" "http://a$3"; }
reseed() { curl -s --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -X POST "http://a/v1/reseed"; }

seed "$T/seed.img" "$SECRET"
agent_start --seed "$T/seed.img"
NEW=new-secret-abcdef0123456789

is "before the seal, the secret works" "$(code "$SECRET" GET /v1/execs)" 200
is "seal: 200" "$(code "$SECRET" POST /v1/seal)" 200
like "seal says sealed" "$(cat "$T/body")" '"sealed":true'
is "sealed: its own secret gets 503" "$(code "$SECRET" GET /v1/execs)" 503
like "and the answer says not ready" "$(cat "$T/body")" 'not_ready'
like "/health says not ready" "$(curl -s --unix-socket "$SOCK" http://a/health)" '"ready":false'
check "sealed: the secret file is gone" test ! -e "$T/secret"
is "sealed: seal again gets 503 too" "$(code "$SECRET" POST /v1/seal)" 503

seed "$T/seed.img" "$NEW"
is "reseed without a secret: 200" "$(reseed)" 200
like "it says ready, not restored" "$(cat "$T/body")" '"ready":true,"restored":false'
is "after the reseed, the old secret gets 401" "$(code "$SECRET" GET /v1/execs)" 401
is "and the seed's secret 200" "$(code "$NEW" GET /v1/execs)" 200
is "the secret file holds the new one" "$(cat "$T/secret")" "$NEW"
is "mode 0600" "$(stat -c %a "$T/secret")" 600

head -c 4096 /dev/zero > "$T/seed.img"
is "reseed from a disk with no seed: 409" "$(reseed)" 409
like "it says so" "$(cat "$T/body")" 'holds no seed'
seed "$T/seed.img" short
is "reseed from a seed with a short secret: 409" "$(reseed)" 409
is "a bad seed changes nothing: the secret still works" "$(code "$NEW" GET /v1/execs)" 200
is "and nobody else's" "$(code "$SECRET" GET /v1/execs)" 401
like "the agent logged seal and reseed" "$(cat "$T/agent.log")" 'reseeded from'

# An agent without --seed refuses to be sealed (nothing could unseal it).
"$AGENT" --listen "unix:$T/b.sock" --secret-file "$T/secret" --workspace "$T/ws" --log "$T/b.log" &
B=$!
at_exit "kill $B"
for i in $(seq 100); do [ -S "$T/b.sock" ] && break; sleep 0.02; done
SOCK="$T/b.sock"
is "no --seed: seal gets 409" "$(code "$NEW" POST /v1/seal)" 409
like "it says why" "$(cat "$T/body")" 'no seed disk'
is "and the secret still works" "$(code "$NEW" GET /v1/execs)" 200
is "no --seed: reseed gets 409" "$(reseed)" 409

# POST /v1/claim (warm pools): authenticated, and only an init has a lifetime
# to set (pool.sh claims a real one).
claim() { curl -s --unix-socket "$SOCK" -o "$T/body" -w '%{http_code}' -X POST \
	-H "X-Sandbox-Secret: $1" -H 'Content-Type: application/json' -d "$2" http://a/v1/claim; }
is "claim without the secret: 401" "$(claim wrong '{"deadline_s": 5}')" 401
is "claim with a bad body: 400" "$(claim "$NEW" '{"deadline_s": -1}')" 400
is "claim on an agent that is not an init: 409" "$(claim "$NEW" '{"deadline_s": 5}')" 409
like "  saying so" "$(cat "$T/body")" 'not_init'
done_testing
