# A short run of every libFuzzer target (tests/fuzz/*.c): builds them with
# `make fuzz` when clang is there, then runs each for a bounded number of inputs.
# Longer campaigns: build/fuzz/NAME -max_total_time=3600 CORPUS_DIR
. "$(dirname "$0")/../lib.sh"

if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
	ok "# SKIP no clang"
	exit 0
fi
if ! make -s -C "$TOP" fuzz > "$T/make.log" 2>&1; then
	not_ok "make fuzz"
	sed 's/^/# /' "$T/make.log" | tail -n 30
	exit 1
fi
ok "make fuzz builds every target"

# Seeds, so the short run starts from the shapes that matter.
mkdir -p "$T/seeds/json-body" "$T/seeds/path" "$T/seeds/utf8-b64" "$T/seeds/jsonrpc" \
	"$T/seeds/aws-xml"
printf '{"cmd":"ls -la","cwd":"/tmp","env":{"A":"b"},"timeout_ms":1000,"as_root":false}' \
	> "$T/seeds/json-body/exec"
printf '{"path":"a/b","content":"aGk=","encoding":"base64","mode":420,"mkdirs":true}' \
	> "$T/seeds/json-body/write"
printf '{"path":".","recursive":true,"max_entries":0,"exclude":[".git",1]}' \
	> "$T/seeds/json-body/list"
printf '{"secret":"0123456789abcdef","env":{"K":"V"},"x":null}' > "$T/seeds/json-body/run"
printf '../../etc//./passwd/' > "$T/seeds/path/dots"
printf '/workspace/a/../../..' > "$T/seeds/path/up"
printf 'caf\303\251 \342\202\254 \360\235\204\236' > "$T/seeds/utf8-b64/utf8"
printf 'Zm9vYmFy' > "$T/seeds/utf8-b64/b64"
printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{}}}' \
	> "$T/seeds/jsonrpc/call"
printf '{"jsonrpc":"2.0","id":"a","method":"x","params":{"sandbox_id":"s","timeout_s":5,"env":{"A":"b"},"exclude":["x"],"network":"none","opt":null}}' \
	> "$T/seeds/jsonrpc/params"
printf '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}' \
	> "$T/seeds/jsonrpc/note"
printf '{"jsonrpc":"2.0","id":7,"result":{}}' > "$T/seeds/jsonrpc/response"
printf '[{"jsonrpc":"2.0","id":1,"method":"ping"}]' > "$T/seeds/jsonrpc/batch"
# aws-xml: two bytes choose the tag and the parent, then an answer as AWS sends it.
printf '\000\004<ErrorResponse><Error><Type>Sender</Type><Code>No&amp;Such&#x41;</Code><Message>m &lt;x&gt;</Message></Error></ErrorResponse>' \
	> "$T/seeds/aws-xml/iam-error"
printf '\002\010<GetRoleResponse><GetRoleResult><Role><Arn>arn:aws:iam::1:role/r</Arn><AssumeRolePolicyDocument>%%7B%%22a%%22%%7D</AssumeRolePolicyDocument></Role></GetRoleResult></GetRoleResponse>' \
	> "$T/seeds/aws-xml/get-role"
printf '\006\007<PublicAccessBlockConfiguration xmlns="x"><BlockPublicAcls>true</BlockPublicAcls><SSEAlgorithm/></PublicAccessBlockConfiguration>' \
	> "$T/seeds/aws-xml/s3"
# fwd-http: a byte for where the input is cut, then requests as a client sends them.
mkdir -p "$T/seeds/fwd-http" "$T/seeds/escape"
printf '\007POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n0\r\nT: 1\r\n\r\nGET / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab' \
	> "$T/seeds/fwd-http/pipelined"
printf '\003HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n' \
	> "$T/seeds/fwd-http/answer"
printf 'log \033]2;title\007 \302\233m \377 caf\303\251\n' > "$T/seeds/escape/log"
# http-request: a byte for where the input is cut, then what a client sends the
# agent: pipelined requests (chunked with a trailer, Expect, a query, absolute-form,
# HTTP/1.0), and an upgrade with the raw bytes after it.
mkdir -p "$T/seeds/http-request"
printf '\007POST /v1/archive/upload?path=a%%20b&x=1+2&flag HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;x\r\nhello\r\n0\r\nX-Content-Sha256: ab\r\n\r\nGET /health HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nabGET http://h/v1/x HTTP/1.0\r\n\r\n' \
	> "$T/seeds/http-request/pipelined"
printf '\003GET /v1/tunnel?port=80 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nraw bytes' \
	> "$T/seeds/http-request/upgrade"
# tls-hello: two bytes for where the input is cut, then a ClientHello (Python's
# ssl), whole and split into two records.
mkdir -p "$T/seeds/tls-hello"
python3 - "$T/seeds/tls-hello" <<'EOF'
import ssl, sys
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
t = ssl.create_default_context().wrap_bio(i, o, server_hostname="up.test")
try:
    t.do_handshake()
except ssl.SSLWantReadError:
    pass
r = o.read()
open(sys.argv[1] + "/whole", "wb").write(b"\x00\x40" + r)
m = r[5:]
h = lambda b: r[:3] + len(b).to_bytes(2, "big") + b
open(sys.argv[1] + "/split", "wb").write(b"\x01\x00" + h(m[:100]) + h(m[100:]))
EOF
# net-scrub: a byte for the read size (and HEAD), then an answer; the values
# are "SeCrEt" and "tok3n-9".
mkdir -p "$T/seeds/net-scrub"
printf '\005HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nSeC\r\n3\r\nrEt\r\n0\r\nT: SeCrEt\r\n\r\n' \
	> "$T/seeds/net-scrub/chunked"
printf '\003HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX: tok3n-9\r\nContent-Length: 12\r\n\r\nxx tok3n-9 x' \
	> "$T/seeds/net-scrub/length"
printf '\201HTTP/1.0 200 OK\r\nContent-Encoding: gzip\r\n\r\nSeCrEtSeCrEt' > "$T/seeds/net-scrub/close"
# copy-guard: an entry name, a NUL, a link target.
mkdir -p "$T/seeds/copy-guard"
printf 'a/b/l\000../../x' > "$T/seeds/copy-guard/link"
printf './dir/\000/etc' > "$T/seeds/copy-guard/abs"
# diff-order: a cursor, or two paths split at a NUL.
mkdir -p "$T/seeds/diff-order"
printf 'd1.120.7.0badf00d' > "$T/seeds/diff-order/cursor"
printf '/workspace/node_modules/\000/home/sandbox/.npm' > "$T/seeds/diff-order/paths"

# image-layer: a layer as registries serve them, plain and gzip'd: directories,
# a hard link, a symlink, whiteouts, an opaque directory.
mkdir -p "$T/seeds/image-layer" "$T/seeds/image-meta"
python3 - "$T/seeds/image-layer" <<'EOF'
import gzip, io, os, sys, tarfile
b = io.BytesIO()
t = tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT)
for name, kind, extra in [
        ("./", tarfile.DIRTYPE, ""), ("etc/", tarfile.DIRTYPE, ""), ("etc/a", tarfile.REGTYPE, "a\n"),
        ("etc/b", tarfile.LNKTYPE, "etc/a"), ("etc/l", tarfile.SYMTYPE, "/etc/a"),
        ("etc/.wh.gone", tarfile.REGTYPE, ""), ("var/.wh..wh..opq", tarfile.REGTYPE, ""),
        ("var/x", tarfile.REGTYPE, "x")]:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    data = extra.encode() if kind == tarfile.REGTYPE else b""
    if kind in (tarfile.LNKTYPE, tarfile.SYMTYPE):
        ti.linkname = extra
    ti.size = len(data)
    ti.uid = ti.gid = 1000
    t.addfile(ti, io.BytesIO(data) if data else None)
t.close()
open(os.path.join(sys.argv[1], "tree"), "wb").write(b.getvalue())
open(os.path.join(sys.argv[1], "tree.gz"), "wb").write(gzip.compress(b.getvalue()))
EOF
h64() { printf "$1%.0s" $(seq 64); }
printf '\000docker.io/library/busybox:1.36@sha256:%s' "$(h64 a)" > "$T/seeds/image-meta/ref"
printf '\001{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":2},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":9}],"rootfs":{"diff_ids":["sha256:%s"]}}' \
	"$(h64 b)" "$(h64 c)" "$(h64 d)" > "$T/seeds/image-meta/manifest"
printf '\002{"manifests":[{"digest":"sha256:%s","platform":{"os":"linux","architecture":"amd64"}},{"digest":"sha256:%s","platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}' \
	"$(h64 e)" "$(h64 f)" > "$T/seeds/image-meta/index"
printf '\003Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/x:pull"' \
	> "$T/seeds/image-meta/challenge"

# budget: a command's output (the first byte sets the budget), and a result.
mkdir -p "$T/seeds/budget"
printf '\200exit 3\nline "one"\t\\\001\377caf\303\251\nerror: the last line\n' > "$T/seeds/budget/output"
printf '{"stdout":"a\\nb","stdout_omitted":{"offset":2,"length":9},"entries":[{"path":"/w","size":1}]}' \
	> "$T/seeds/budget/result"
# ns-tag: an agent's command line, NUL-separated.
mkdir -p "$T/seeds/ns-tag"
printf '/opt/sbxtop/bin/sbxtop-agent\000--init\000--tag\000sbx-1a2b3c@0123456789abcdef\000--oom-events\000fd:6' \
	> "$T/seeds/ns-tag/agent"
printf -- '--tag\000@0123456789abcdef' > "$T/seeds/ns-tag/empty-id"
# keys: a key's request body, times, a scope list, a credential's three places.
mkdir -p "$T/seeds/keys"
printf '{"name":"ci","scopes":["exec","metrics"],"rateLimit":60,"expiresAt":"2031-02-03T04:05:06.789+01:30"}' \
	> "$T/seeds/keys/spec"
# Numbers past int64_t's range: a conversion of one is undefined (UBSan says so).
printf '{"name":"ci","rateLimit":3.3e67,"expiresAt":null}' > "$T/seeds/keys/huge"
printf '{"jsonrpc":"2.0","id":1e300,"method":"tools/call","params":{"name":"sandbox_exec","arguments":{"timeout_s":-3e40,"mode":1e99}}}' \
	> "$T/seeds/jsonrpc/huge"
printf '2030-02-28T23:59:59.999Z' > "$T/seeds/keys/time"
printf 'exec, admin,metrics' > "$T/seeds/keys/scopes"
printf 'Bearer sbxk_0123X-API-Keyapi_key=sbxk_4567' > "$T/seeds/keys/credential"
# create-opts: a create's request, as sbxtop/create and sandbox_create take it.
mkdir -p "$T/seeds/create-opts"
printf '{"name":"web","backend":"ns","image":"","memory_mib":512,"disk_mib":0,"cpus":1.5,"pids":100,"max_duration_s":600,"idle_s":0,"idle_suspend_s":30,"network":"rules","allow":["a.org:443"],"deny":["b.org"],"ask":true,"secrets":["GH"],"env":{"A":"b"},"from_snapshot":null}' \
	> "$T/seeds/create-opts/all"
printf '{"memory_mib":1e300,"cpus":-1e300,"pids":3.3e67}' > "$T/seeds/create-opts/huge"

# thin-json: the thin sbxtop's cJSON, as the core server answers it.
mkdir -p "$T/seeds/thin-json"
printf '{"jsonrpc":"2.0","id":1,"result":{"sandbox":{"id":"sbx-1","limits":{"cpus":1.5,"pids":4096},"env":null,"forwards":[]}}}' \
	> "$T/seeds/thin-json/answer"
printf '["\\u00e9\\ud83d\\ude00", -0, 1e400, 0.30000000000000004, true, false, null, {"":""}]' \
	> "$T/seeds/thin-json/values"

for f in "$TOP"/tests/fuzz/*.c; do
	name=$(basename "$f" .c)
	bin="$TOP/build/fuzz/$name"
	mkdir -p "$T/corpus/$name"
	cp "$T/seeds/$name"/* "$T/corpus/$name/" 2>/dev/null
	if (cd "$T" && "$bin" -runs="${FUZZ_RUNS:-200000}" -max_total_time="${FUZZ_SECONDS:-10}" \
	    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$T/corpus/$name") \
	    > "$T/$name.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T/$name.log")
		ok "fuzz $name: ${runs:-?} inputs, no crash"
	else
		not_ok "fuzz $name"
		grep -E 'ERROR|runtime error|SUMMARY|Test unit written|Base64' "$T/$name.log" |
			head -n 20 | sed 's/^/# /'
		# Keep the input that failed past the temp directory's removal.
		for c in "$T"/crash-* "$T"/leak-* "$T"/timeout-* "$T"/oom-*; do
			[ -e "$c" ] && cp "$c" "$TOP/build/fuzz/$name-$(basename "$c")" &&
				diag "kept build/fuzz/$name-$(basename "$c")"
		done
	fi
done
done_testing
