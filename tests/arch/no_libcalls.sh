#!/usr/bin/env bash
# The library's own code never calls memset: the compiler may turn a fill
# loop (or a large struct's zeroing) into a call to it, and memset is this
# library's exported, interposable function. No object of the engine,
# observability or the allocator may reference memset, bzero or the
# public hz_clear*: their clears go to the engine directly. The kernels
# and front ends may not call memcpy or memmove either.
# Usage: no_libcalls.sh NM ARCHIVE...
set -u
nm=$1
shift
pass=0 fail=0
strict='fill_c.c.o front.c.o kernels.c.o engine.c.o clear.c.o'
for ar in "$@"; do
	objs=$("$nm" "$ar" 2>/dev/null | sed -n 's/^\(.*\.o\):$/\1/p')
	[ -n "$objs" ] || { fail=$((fail + 1)); echo "FAIL - no objects in $ar"; continue; }
	for obj in $objs; do
		deny='memset|__memset_chk|bzero|explicit_bzero|hz_clear|hz_clear_pages|hz_clear_hinted'
		case " $strict " in *" $obj "*) deny="$deny|memcpy|memmove" ;; esac
		refs=$("$nm" -u "$ar" 2>/dev/null | awk -v o="$obj:" '/:$/ { cur = ($0 == o) } cur && /U / { print $2 }' |
			grep -Ex "$deny" | tr '\n' ' ')
		if [ -z "$refs" ]; then pass=$((pass + 1)); echo "ok   - $(basename "$ar") $obj"
		else fail=$((fail + 1)); echo "FAIL - $(basename "$ar") $obj references: $refs"; fi
	done
done
# The check can fail: the archives must hold the objects it is strictest on.
all=$(for ar in "$@"; do "$nm" "$ar" 2>/dev/null; done)
for obj in $strict; do
	grep -qx "$obj:" <<<"$all" || { fail=$((fail + 1)); echo "FAIL - $obj in none of $*"; }
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
