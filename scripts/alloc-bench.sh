#!/usr/bin/env bash
# The allocator benchmark: bench/alloc_bench under glibc (no preload),
# jemalloc, mimalloc, tcmalloc and hugezero (LD_PRELOAD), one process per
# (case, allocator), the allocators in a new random order in every case of
# every repetition; then bench/release_bench (hugezero's batched release
# against a madvise loop) once per repetition. Prints the medians over the
# repetitions (the machine is shared and noisy) as a table and writes them
# as CSV, every single run to FILE's .raw.csv sibling.
#
# usage: scripts/alloc-bench.sh [--reps N] [--csv FILE] [LIBHUGEZERO]
#   LIBHUGEZERO defaults to build/libhugezero.so; the benchmarks are taken
#   from the bench/ directory next to it. Builds nothing.
set -eu
cd "$(dirname "$0")/.."

reps=5 csv=alloc_bench.csv lib=build/libhugezero.so
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--csv) csv=$2; shift 2 ;;
	-*) echo "usage: $0 [--reps N] [--csv FILE] [LIBHUGEZERO]" >&2; exit 2 ;;
	*) lib=$1; shift ;;
	esac
done
case $reps in '' | *[!0-9]* | 0) echo "$0: --reps needs a positive number" >&2; exit 2 ;; esac
[ -f "$lib" ] || { echo "$0: no $lib (build it: scripts/build.sh)" >&2; exit 1; }
lib=$(realpath "$lib")
bin=$(dirname "$lib")/bench
for b in alloc_bench release_bench; do
	[ -x "$bin/$b" ] || { echo "$0: no $bin/$b (build with -DHZ_BENCH=ON)" >&2; exit 1; }
done

# The other allocators by soname, in Debian's multiarch library directory.
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	echo "$(uname -m)-linux-gnu")
libdir=/usr/lib/$multiarch
allocs=(glibc jemalloc mimalloc tcmalloc hugezero)
declare -A preload=([glibc]= [jemalloc]=$libdir/libjemalloc.so.2 [mimalloc]=$libdir/libmimalloc.so.2
	[tcmalloc]=$libdir/libtcmalloc_minimal.so.4 [hugezero]=$lib)
for a in "${allocs[@]}"; do
	p=${preload[$a]}
	[ -z "$p" ] || [ -f "$p" ] || { echo "$0: $a not found: $p (scripts/deps.sh installs it)" >&2; exit 1; }
done

cases=("loop 256K" "loop 4M" "loop 32M" "loop 256M" "fresh 256K" "fresh 4M" "fresh 32M" "fresh 256M"
	"small 1" "small 2" "churn 300")
raw=${csv%.csv}.raw.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "rep,mode,arg,allocator,value,peak_rss_kib,status" >"$raw"

# One run: appends a raw row; value "fail" if the process failed or its
# malloc came from somewhere else than the allocator it was given.
run() { # rep allocator mode arg
	local rep=$1 a=$2 mode=$3 arg=$4 out rc=0 from want value rss
	if [ -z "${preload[$a]}" ]; then
		out=$(env -u LD_PRELOAD "$bin/alloc_bench" "$mode" "$arg" 2>"$tmp/err") || rc=$?
		want=libc.so.6
	else
		out=$(env LD_PRELOAD="${preload[$a]}" "$bin/alloc_bench" "$mode" "$arg" 2>"$tmp/err") || rc=$?
		want=$(basename "${preload[$a]}")
	fi
	from=$(awk '$1 == "malloc_from" { print $2 }' <<<"$out")
	value=$(awk -v m="$mode" '$1 == m { print $3 }' <<<"$out")
	rss=$(awk '$1 == "peak_rss_kib" { print $2 }' <<<"$out")
	if [ $rc -ne 0 ] || [ -z "$value" ] || [ "$(basename "${from:-?}")" != "$want" ]; then
		echo "  $a $mode $arg: failed (status $rc, malloc from ${from:-?}): $(tr '\n' ' ' <"$tmp/err")" >&2
		echo "$rep,$mode,$arg,$a,fail,,$rc" >>"$raw"
	else
		echo "$rep,$mode,$arg,$a,$value,$rss,0" >>"$raw"
	fi
}

start=$SECONDS
for ((rep = 1; rep <= reps; rep++)); do
	echo "repetition $rep/$reps ($((SECONDS - start)) s)" >&2
	for c in "${cases[@]}"; do
		for a in $(printf '%s\n' "${allocs[@]}" | shuf); do
			run "$rep" "$a" $c
		done
	done
	# ranges,method,ms,syscalls; its two runs are alternated in it.
	if "$bin/release_bench" --reps 2 --csv "$tmp/release.csv" >/dev/null 2>"$tmp/err"; then
		awk -F, -v rep="$rep" 'NR > 1 { print rep ",release," $1 "," $2 "," $3 ",,0" }' \
			"$tmp/release.csv" >>"$raw"
	else
		echo "  release_bench failed: $(cat "$tmp/err")" >&2
	fi
done
runtime=$((SECONDS - start))

# Medians over the repetitions, then the table and the CSV.
awk -F, -v reps="$reps" -v runtime="$runtime" -v csv="$csv" -v order="${cases[*]}" '
function med(s,   v, n, i, j, t) {
	n = split(s, v, " ")
	if (n == 0) return ""
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function fmt(x) {
	if (x == "") return "-"
	return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x)
}
NR == 1 { next }
$2 == "release" { rel[$3 "," $4] = rel[$3 "," $4] " " $5; if (!($3 in seen)) { seen[$3]; rord[++nr] = $3 }; next }
{
	k = $2 " " $3 "," $4
	if ($5 == "fail") fails[k]++
	else { t[k] = t[k] " " $5; r[k] = r[k] " " $6 }
}
END {
	na = split("glibc jemalloc mimalloc tcmalloc hugezero", A, " ")
	nc = split(order, W, " ")
	printf "median of %d repetitions, allocators in random order in each; %d s\n\n", reps, runtime
	printf "loop: calloc+touch+free per round (us); fresh: calloc+touch per block, never freed (us);\n"
	printf "small: malloc/free pair per thread (ns); churn: free+calloc+touch of 1-64 MiB, 16 live (us);\n"
	printf "speedups are the other time / hugezero time\n\n"
	hdr = sprintf("%-11s %-4s", "case", "unit")
	for (i = 1; i <= na; i++) hdr = hdr sprintf(" %10s", A[i])
	printf "%s %22s %13s\n", hdr, "hz vs fastest other", "hz vs glibc"
	print "case,unit,glibc,jemalloc,mimalloc,tcmalloc,hugezero,fastest_other,speedup_vs_fastest_other,speedup_vs_glibc,glibc_rss_kib,jemalloc_rss_kib,mimalloc_rss_kib,tcmalloc_rss_kib,hugezero_rss_kib,rss_hugezero_over_glibc,failed_runs" > csv
	for (c = 1; c < nc; c += 2) {
		name = W[c] " " W[c + 1]; unit = W[c] == "small" ? "ns" : "us"
		div = W[c] == "small" ? 1 : 1000
		line = sprintf("%-11s %-4s", name, unit); row = name "," unit; best = ""; nf = 0
		for (i = 1; i <= na; i++) {
			k = name "," A[i]; m[i] = med(t[k]); mr[i] = med(r[k]); nf += fails[k]
			if (m[i] != "") m[i] /= div
			line = line sprintf(" %10s", m[i] == "" ? "FAIL" : fmt(m[i]))
			row = row "," m[i]
			if (i < na && m[i] != "" && (best == "" || m[i] < m[best])) best = i
		}
		sf = (best != "" && m[na] != "") ? m[best] / m[na] : ""
		sg = (m[1] != "" && m[na] != "") ? m[1] / m[na] : ""
		line = line sprintf(" %13s %8s %12s", sf == "" ? "-" : sprintf("%.2fx", sf), best == "" ? "" : A[best],
			sg == "" ? "-" : sprintf("%.2fx", sg))
		print line (nf ? sprintf("  (%d failed runs)", nf) : "")
		rss[c] = name
		for (i = 1; i <= na; i++) rs[c, i] = mr[i]
		row = row "," (best == "" ? "" : A[best]) "," sf "," sg
		for (i = 1; i <= na; i++) row = row "," mr[i]
		row = row "," ((mr[1] != "" && mr[na] != "") ? sprintf("%.3f", mr[na] / mr[1]) : "") "," nf
		print row >> csv
	}
	printf "\npeak RSS (VmHWM, MiB)\n%-11s %-4s", "case", ""
	for (i = 1; i <= na; i++) printf " %10s", A[i]
	printf " %13s\n", "hz / glibc"
	for (c = 1; c < nc; c += 2) {
		printf "%-11s %-4s", rss[c], "MiB"
		for (i = 1; i <= na; i++) printf " %10s", rs[c, i] == "" ? "FAIL" : sprintf("%.1f", rs[c, i] / 1024)
		printf " %13s\n", (rs[c, 1] != "" && rs[c, na] != "") ? sprintf("%.2fx", rs[c, na] / rs[c, 1]) : "-"
	}
	printf "\nrelease of 512 free ranges of touched huge pages (release_bench), ms\n"
	printf "%-12s %14s %10s %10s\n", "ranges", "madvise loop", "batched", "speedup"
	for (i = 1; i <= nr; i++) {
		l = med(rel[rord[i] ",madvise_loop"]); b = med(rel[rord[i] ",batched"])
		printf "%-12s %14.2f %10.2f %9.2fx\n", rord[i], l, b, l / b
		printf "release %s,ms,,,,,%s,madvise_loop,%s,,,,,,,,0\n", rord[i], b, l / b >> csv
		printf "release %s madvise loop,ms,,,,,%s,,,,,,,,,,0\n", rord[i], l >> csv
	}
}' "$raw"
echo
echo "CSV: $csv, every run: $raw"
