# What a model reads: one scripted agent session over `sbxtop --mcp` through the
# official MCP SDK client (bench/agent-session.mjs: tools/list, create, upload a
# small C project, build it with a few hundred KB of compiler output, a failing
# test, a fix, diff, download, destroy), counting the characters of every
# result's text content and the tools/list JSON; beside the same session against
# the previous release (commit BENCH_PREV, default b9a729f), built in this run
# from a temporary git worktree.  Fewer is better, as long as the session works.
set -eu
BUILD=${BUILD:-build}
PREV=${BENCH_PREV:-b9a729f}
TOP=$(pwd)
export TOP
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
wt=""
# Each build's --mcp starts its own core server: each gets its own XDG directories.
stop_all() {
	for d in "$T"/x-*; do
		[ -d "$d" ] || continue
		XDG_RUNTIME_DIR="$d/run" XDG_STATE_HOME="$d/state" XDG_CONFIG_HOME="$d/config" \
			XDG_DATA_HOME="$d/data" XDG_CACHE_HOME="$d/cache" "$(cat "$d/sbxtop")" serve --stop >/dev/null 2>&1 || true
	done
}
trap 'stop_all; [ -n "$wt" ] && git worktree remove --force "$wt" >/dev/null 2>&1; rm -rf "$T"' EXIT

if [ ! -d tests/mcp/node_modules/@modelcontextprotocol/sdk ]; then
	npm ci --prefix tests/mcp --no-audit --no-fund > "$T/npm.log" 2>&1 ||
		{ echo "npm ci --prefix tests/mcp failed (the MCP SDK client is needed):"; tail -n 20 "$T/npm.log"; exit 1; }
fi

# The project: src/add.c has the bug the test finds; `make` prints a verbose
# build's lines on stdout and its warnings on stderr.
P="$T/project"
mkdir -p "$P/src"
cat > "$P/Makefile" <<'EOF'
app: src/main.c src/add.c
	@awk 'BEGIN { for (i = 1; i <= 1500; i++) { \
		printf "gcc -O2 -Wall -Wextra -Isrc -c src/gen/unit_%04d.c -o build/unit_%04d.o\n", i, i; \
		printf "src/gen/unit_%04d.c:%d:9: warning: comparison of integer expressions of different signedness: int and size_t [-Wsign-compare]\n", i, i % 90 + 10 > "/dev/stderr" } }'
	gcc -O2 -Wall -o app src/main.c src/add.c
test: app
	./app
EOF
cat > "$P/src/main.c" <<'EOF'
#include <stdio.h>

int add(int a, int b);

int main(void)
{
	int r = add(2, 2);

	if (r != 4) {
		fprintf(stderr, "FAIL: add(2, 2) = %d, expected 4\n", r);
		return 1;
	}
	puts("PASS: add");
	return 0;
}
EOF
printf 'int add(int a, int b)\n{\n\treturn a + b + 1;\n}\n' > "$P/src/add.c"

# session NAME SBXTOP: the session against SBXTOP; its JSON in $T/NAME.json.
session() {
	x="$T/x-$1"
	mkdir -p "$x/state" "$x/config" "$x/data" "$x/cache" "$x/dl"
	mkdir -m 0700 "$x/run"
	echo "$2" > "$x/sbxtop"
	XDG_RUNTIME_DIR="$x/run" XDG_STATE_HOME="$x/state" XDG_CONFIG_HOME="$x/config" \
		XDG_DATA_HOME="$x/data" XDG_CACHE_HOME="$x/cache" SBXTOP="$2" \
		node bench/agent-session.mjs "$P" "$x/dl/src" > "$T/$1.json"
}

prev=""
if git rev-parse -q --verify "$PREV^{commit}" >/dev/null 2>&1; then
	wt="$T/prev"
	git worktree add --detach "$wt" "$PREV" >/dev/null 2>&1
	if make -C "$wt" -j2 BUILD="$T/prev-build" > "$T/prev-make.log" 2>&1; then
		session was "$T/prev-build/sbxtop"
		prev=$PREV
	else
		echo "the previous release ($PREV) did not build:"; tail -n 20 "$T/prev-make.log"
	fi
else
	echo "commit $PREV is not in this checkout's history: today's figure only"
fi
session now "$TOP/$BUILD/sbxtop"

printf '%-48s %10s %10s\n' "characters a model reads in one agent session" "${prev:-}" "today"
node -e 'const fs = require("fs");
	const [dir, prev] = process.argv.slice(1);
	const now = JSON.parse(fs.readFileSync(`${dir}/now.json`, "utf8"));
	const was = prev ? JSON.parse(fs.readFileSync(`${dir}/was.json`, "utf8")) : {};
	const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
	const row = (k, a, b) => console.log(`  ${k.padEnd(46)} ${String(a ?? "").padStart(10)} ${String(b).padStart(10)}`);
	for (const k of Object.keys(now)) row(k, was[k], now[k]);
	row("total per session", prev ? sum(was) : "", sum(now));' "$T" "$prev"
