# Faults at every step of create and destroy, on the ns backend (the walk is
# tests/faults.sh's): a sandbox made answers, one destroyed is gone or answers,
# nothing runs or stays on the host that no record names.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/faults.sh"

# --- create --------------------------------------------------------------------
keep=$(sbx create --name keep); at_exit "$SBXTOP --standalone destroy $keep"
steps create create.ns.ready sbx create
sbx destroy "$(ids | tr ' ' '\n' | grep -v "$keep")" > /dev/null 2>&1
for p in $points; do
	for a in kill fail; do
		before=$(ids)
		faulted "$p" "$a" "$SBXTOP" --standalone create
		settle "$a"
		now=$(ids)
		new=$(for i in $now; do case " $before " in *" $i "*) ;; *) echo "$i";; esac; done)
		for i in $before; do case " $now " in *" $i "*) ;; *) problem "$i went";; esac; done
		if [ -n "$new" ]; then
			answers "$new" || problem "the sandbox created ($new) does not answer"
			[ "$frc" -eq 0 ] || [ "$a" = kill ] || problem "recorded, yet create said $frc: $(cat "$T/ferr")"
			sbx destroy "$new" > /dev/null
		elif [ "$frc" -eq 0 ]; then
			problem "create said yes and nothing was recorded"
		elif [ "$a" = fail ] && ! says_why; then
			problem "the error does not say why: $(cat "$T/ferr")"
		fi
		answers "$keep" || problem "the other sandbox ($keep) no longer answers"
		verdict "create, $a at $p: created whole or not at all, nothing unknown left"
	done
done

# --- destroy -------------------------------------------------------------------
victim=$(sbx create)
steps destroy destroy.ns.killed sbx destroy "$victim"
for p in $points; do
	for a in kill fail; do
		victim=$(sbx create)
		faulted "$p" "$a" "$SBXTOP" --standalone destroy "$victim"
		settle "$a"
		st=$(state_of "$victim")
		case "$st" in
		# A record that could not be dropped is the error's; gc drops it.
		"") [ "$frc" -eq 0 ] || [ "$a" = kill ] || says_why || problem "gone, yet destroy said $frc: $(cat "$T/ferr")" ;;
		running) answers "$victim" || problem "still recorded running, and does not answer"
			[ "$frc" -ne 0 ] || problem "destroy said yes and it runs" ;;
		terminated) ;;	# stopped half-way: destroy again ends it
		*) problem "recorded as $st" ;;
		esac
		if [ -n "$st" ]; then
			sbx destroy "$victim" > /dev/null 2>&1 || problem "destroy again fails: $(sbx destroy "$victim" 2>&1)"
			[ -z "$(state_of "$victim")" ] || problem "destroy again leaves a record"
		fi
		_l=$(left); [ -z "$_l" ] || problem "left once destroyed again: $_l"
		verdict "destroy, $a at $p: gone, or there and answering, nothing unknown left"
	done
done
done_testing
