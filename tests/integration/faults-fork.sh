# Faults at every step of fork, copy in and copy out, on the ns backend (the
# walk is tests/faults.sh's): a fork's source runs on as it was, a file copied
# is there whole or not at all, nothing unknown is left.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/faults.sh"

keep=$(sbx create --name keep); at_exit "$SBXTOP --standalone destroy $keep"
# --- fork ----------------------------------------------------------------------
src=$(sbx create --name fsrc); at_exit "$SBXTOP --standalone destroy $src"
sbx exec -n "$src" -- 'echo forked-state > /workspace/f' > /dev/null
steps fork fork.ns.frozen sbx fork "$src"
for i in $(ids); do [ "$i" = "$src" ] || [ "$i" = "$keep" ] || sbx destroy "$i" > /dev/null; done
for p in $points; do
	for a in kill fail; do
		before=$(ids)
		faulted "$p" "$a" "$SBXTOP" --standalone fork "$src"
		settle "$a"
		st=$(state_of "$src")
		[ "$st" = running ] || problem "the source is $st (a fork must leave it as it was)"
		answers "$src" || problem "the source does not answer"
		for i in $(ids); do
			case " $before " in *" $i "*) continue ;; esac
			[ "$(sbx exec -n "$i" -- cat /workspace/f 2>/dev/null)" = forked-state ] ||
				problem "the fork $i does not answer with the source's files"
			sbx destroy "$i" > /dev/null
		done
		verdict "fork, $a at $p: a whole copy or none, the source running, nothing unknown left"
	done
done

# --- copy in and out -----------------------------------------------------------
head -c 3000000 /dev/urandom > "$T/big"
sum=$(sha256sum < "$T/big" | cut -d' ' -f1)
steps "copy in" copy-in.sending sbx cp "$T/big" "$keep:/workspace/big"
sbx exec -n "$keep" -- rm -f /workspace/big > /dev/null
for p in $points; do
	for a in kill fail; do
		faulted "$p" "$a" "$SBXTOP" --standalone cp "$T/big" "$keep:/workspace/big"
		settle "$a"
		got=$(sbx exec -n "$keep" -- 'test -e /workspace/big && sha256sum < /workspace/big | cut -d" " -f1; ls -A /workspace | grep -c sbxtop-part' 2>&1)
		case "$got" in
		"$sum"?0|0) ;;
		*) problem "in the sandbox: $got (want the whole file or none, and no part file)" ;;
		esac
		[ "$frc" -ne 0 ] || [ "$(echo "$got" | head -1)" = "$sum" ] || problem "cp said yes, the file is not whole"
		sbx exec -n "$keep" -- rm -f /workspace/big > /dev/null
		verdict "copy in, $a at $p: the file whole or absent, no part of it left"
	done
done

sbx cp "$T/big" "$keep:/workspace/big" > /dev/null
mkdir -p "$T/out"
steps "copy out" copy-out.receiving sbx cp "$keep:/workspace/big" "$T/out/big"
rm -f "$T/out/big"
for p in $points; do
	for a in kill fail; do
		faulted "$p" "$a" "$SBXTOP" --standalone cp "$keep:/workspace/big" "$T/out/big"
		settle "$a"
		if [ -e "$T/out/big" ]; then
			[ "$(sha256sum < "$T/out/big" | cut -d' ' -f1)" = "$sum" ] || problem "a partial file under the name"
		else
			[ "$frc" -ne 0 ] || problem "cp said yes and wrote nothing"
		fi
		# The next copy there clears what a killed one staged.
		sbx cp "$keep:/workspace/big" "$T/out/big" > /dev/null 2>&1 || problem "copy again fails"
		_s=$(ls -A "$T/out" | grep -v '^big$')
		[ -z "$_s" ] || problem "left beside the file after copying again: $_s"
		rm -f "$T/out/big"
		verdict "copy out, $a at $p: the file whole or absent, no staging left"
	done
done
done_testing
