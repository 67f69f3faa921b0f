#!/usr/bin/env bash
# The built libhugezero.so preloaded into real servers, each started and
# stopped here: redis-server (benchmarks, values up to 5 MB read back, its
# memory accounting through malloc_usable_size), PostgreSQL (forked
# backends, pgbench and its invariants, a 256 MB work_mem sort) and a JVM
# (direct buffers from 4 threads, tests/DirectBuffers.java). Each must give
# the expected answers and exit cleanly, have the library loaded (maps,
# LD_DEBUG=bindings), and its HUGEZERO_STATS reports must show that the
# library served its allocation calls.
# Usage: servers.sh LIB
set -u
lib=$(readlink -f "$1")
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# The postgres user must reach its own directory below the work dir.
chmod 711 "$work"
cd "$work" || exit 1
# shellcheck disable=SC2046
unset $(compgen -e | grep "^PG") LD_PRELOAD HUGEZERO_STATS
pass=0 fail=0
redis_pid='' pg_data='' as_pg=()
# The library the server under test loads (postgres may need a copy).
target=$lib

ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }

# Stops whatever server a failed run left behind.
cleanup() {
	if [ -n "$redis_pid" ] && kill -0 "$redis_pid" 2>/dev/null; then
		kill -9 "$redis_pid"; wait "$redis_pid" 2>/dev/null
	fi
	if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
		local pm
		pm=$(head -1 "$pg_data/postmaster.pid")
		"${as_pg[@]}" timeout 20 "$pg_bin/pg_ctl" -D "$pg_data" -m immediate -w -t 10 stop >/dev/null 2>&1 ||
			kill -9 "$pm" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# wait_until SECS PID CMD...: polls CMD until it succeeds (0); 1 when PID
# has exited or SECS have passed.
wait_until() {
	local n=$(($1 * 10)) pid=$2
	shift 2
	while [ $n -gt 0 ]; do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# gone SECS PID: 0 once PID has exited.
gone() {
	local n=$(($1 * 10))
	while kill -0 "$2" 2>/dev/null; do
		[ $n -gt 0 ] || return 1
		sleep 0.1
		n=$((n - 1))
	done
}

# served DIR NAME MIN WHAT: the counter NAME summed over the reports that
# processes started with HUGEZERO_STATS=DIR/stats wrote (DIR/stats.PID)
# must be at least MIN.
served() {
	local dir=$1 name=$2 min=$3 what=$4 files lines sum
	files=$(find "$dir" -maxdepth 1 -name 'stats.*' | wc -l)
	if [ "$files" -eq 0 ]; then
		bad "$what: no HUGEZERO_STATS report written (for $name)"; return
	fi
	lines=$(cat "$dir"/stats.* | awk -v k="$name" '$1 == k' | wc -l)
	sum=$(cat "$dir"/stats.* | awk -v k="$name" '$1 == k { s += $2 } END { printf "%.0f", s }')
	if [ "$lines" -eq 0 ]; then
		bad "$what: no counter $name in $files reports"
	elif [ "$sum" -ge "$min" ]; then
		ok "$what: $name = $sum over $files reports (>= $min)"
	else
		bad "$what: $name = $sum over $files reports, want >= $min"
	fi
}

# bound BINDFILES OBJ_RE WHAT SYM...: LD_DEBUG=bindings output shows each
# SYM referenced by an object matching OBJ_RE bound to $target.
bound() {
	local files=$1 obj=$2 what=$3 l sym missing=''
	shift 3
	l=$(printf '%s' "$target" | sed 's/[][\.*^$+?(){}|]/\\&/g')
	for sym in "$@"; do
		# shellcheck disable=SC2086
		cat $files 2>/dev/null | grep -qE "binding file $obj \[0\] to $l \[0\]: normal symbol \`$sym'" ||
			missing="$missing $sym"
	done
	if [ -z "$missing" ]; then ok "$what: $* bound to the library"
	else bad "$what: not bound to the library:$missing"; fi
}

# mapped PID WHAT: $target is in the process's address space. A process
# that has gone cannot show it: that fails too.
mapped() {
	local maps
	if ! maps=$(cat "/proc/$1/maps" 2>/dev/null) || [ -z "$maps" ]; then
		bad "$2 (pid $1): gone before its maps could be read"; return 1
	fi
	if grep -qF " $target" <<<"$maps"; then return 0; fi
	bad "$2 (pid $1): library not mapped"; return 1
}

# A random high port that nothing listens on (a start that still loses a
# race for it is retried).
pick_port() {
	local p
	while :; do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		(: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null || break
	done
	echo "$p"
}

# ---- redis-server (Debian's links libjemalloc and calls
# malloc_usable_size for its accounting).
run_redis() {
	local d=$work/redis rs port="" out n rc um0 um1 um2 size
	rs=$(command -v redis-server) || { bad "redis: redis-server not installed"; return; }
	mkdir "$d"
	rcli() { timeout 30 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
	ours() { [ "$(rcli info server 2>/dev/null | tr -d '\r' | grep '^process_id:')" = "process_id:$redis_pid" ]; }
	for _ in 1 2 3; do
		port=$(pick_port)
		HUGEZERO_STATS=$d/stats LD_PRELOAD=$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT=$d/bind \
			"$rs" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
			--dir "$d" >"$d/log" 2>&1 &
		redis_pid=$!
		wait_until 20 "$redis_pid" ours && break
		kill -9 "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null
		redis_pid=''
	done
	if [ -z "$redis_pid" ]; then
		bad "redis: server did not start: $(tail -3 "$d/log" | tr '\n' ' ')"; return
	fi
	ok "redis: server up on 127.0.0.1:$port (pid $redis_pid)"
	mapped "$redis_pid" "redis-server" && ok "redis: library mapped in the server"
	bound "$d/bind.*" "$(printf '%s' "$rs" | sed 's/[.]/\\./g')" "redis-server" \
		malloc free memset malloc_usable_size

	out=$(timeout 90 redis-benchmark -h 127.0.0.1 -p "$port" -q -n 20000 -t set,get,lpush,lpop -d 4096 2>&1)
	rc=$?
	n=$(printf '%s\n' "$out" | tr '\r' '\n' | grep -cE '^(SET|GET|LPUSH|LPOP): [0-9.]+ requests per second')
	if [ $rc -eq 0 ] && [ "$n" = 4 ]; then
		ok "redis: benchmark of 4 KB values: $(printf '%s\n' "$out" | tr '\r' '\n' | grep -oE '^[A-Z]+: [0-9]+' | tr '\n' ' ')"
	else
		bad "redis: benchmark of 4 KB values: exit $rc, $n of 4 results: $(printf '%s' "$out" | tail -c 300)"
	fi
	# 2 MB values: the query buffers and values come from the hugepage arenas.
	out=$(timeout 90 redis-benchmark -h 127.0.0.1 -p "$port" -q -n 200 -t set,get -d 2000000 2>&1)
	rc=$?
	n=$(printf '%s\n' "$out" | tr '\r' '\n' | grep -cE '^(SET|GET): [0-9.]+ requests per second')
	if [ $rc -eq 0 ] && [ "$n" = 2 ] && [ "$(rcli strlen key:__rand_int__)" = 2000000 ]; then
		ok "redis: benchmark of 2 MB values"
	else
		bad "redis: benchmark of 2 MB values: exit $rc, $n of 2 results: $(printf '%s' "$out" | tail -c 300)"
	fi

	# Values written and read back; 3 MiB grown to 6 MiB by APPEND
	# (realloc); SETRANGE past the end zero-fills 5 MB with memset.
	used() { rcli info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }
	um0=$(used)
	for size in 100 65536 3145728; do
		head -c $size /dev/urandom >"$d/v$size"
		if [ "$(rcli -x set "k$size" <"$d/v$size")" != OK ]; then
			bad "redis: SET of $size bytes"; continue
		fi
		[ $size = 3145728 ] && um1=$(used)
		rcli --raw get "k$size" >"$d/got"
		if { cat "$d/v$size"; echo; } | cmp -s - "$d/got" && [ "$(rcli strlen "k$size")" = $size ]; then
			ok "redis: $size-byte value read back"
		else
			bad "redis: $size-byte value read back differs"
		fi
	done
	n=$(rcli -x append k3145728 <"$d/v3145728")
	rcli --raw get k3145728 >"$d/got"
	if [ "$n" = 6291456 ] && { cat "$d/v3145728" "$d/v3145728"; echo; } | cmp -s - "$d/got"; then
		ok "redis: 3 MiB value appended to 6 MiB and read back"
	else
		bad "redis: APPEND to the 3 MiB value: length '$n' or content differs"
	fi
	n=$(rcli setrange zeros 5000000 x)
	rcli --raw get zeros >"$d/got"
	if [ "$n" = 5000001 ] && { head -c 5000000 /dev/zero; echo x; } | cmp -s - "$d/got"; then
		ok "redis: SETRANGE at 5 MB reads back as zeros"
	else
		bad "redis: SETRANGE at 5 MB: length '$n' or content differs"
	fi
	rcli del k3145728 zeros >/dev/null
	um2=$(used)
	# Its accounting adds malloc_usable_size of each block: the 3 MiB value
	# counts once, rounded up by at most 2 MiB, and all of it comes back.
	if [ -n "$um0" ] && [ -n "${um1:-}" ] && [ -n "$um2" ] &&
		[ $((um1 - um0)) -ge 3145728 ] && [ $((um1 - um0)) -le $((5 << 20)) ] &&
		[ $((um2 - um0)) -le $((1 << 20)) ]; then
		ok "redis: used_memory $um0, +$((um1 - um0)) with the 3 MiB value, $um2 after DEL"
	else
		bad "redis: used_memory '$um0', with the 3 MiB value '${um1:-}', after DEL '$um2'"
	fi
	out=$(rcli info memory | tr -d '\r')
	if printf '%s\n' "$out" | grep -q '^used_memory_rss:[0-9]' &&
		printf '%s\n' "$out" | grep -q '^mem_allocator:'; then
		ok "redis: info memory ($(printf '%s\n' "$out" | grep -E '^(used_memory_human|mem_allocator):' | tr '\n' ' '))"
	else
		bad "redis: info memory: $(printf '%s' "$out" | head -c 300)"
	fi

	rcli shutdown nosave >/dev/null 2>&1
	if gone 20 "$redis_pid"; then
		wait "$redis_pid"; rc=$?
		if [ $rc -eq 0 ] && grep -q 'ready to exit, bye bye' "$d/log"; then ok "redis: shut down, exit 0"
		else bad "redis: exit $rc: $(tail -5 "$d/log" | tr '\n' ' ')"; fi
	else
		bad "redis: still running 20 s after SHUTDOWN"
	fi
	redis_pid=''
	served "$d" malloc.small.calls 1000 "redis"
	served "$d" malloc.large.calls 100 "redis"
	served "$d" memset.large.calls 1 "redis"
}

# ---- PostgreSQL: the postmaster forks every backend, which must keep the
# library; runs as the postgres user (it refuses root).
run_postgres() {
	local d=$work/pg port=$((20000 + RANDOM % 12000)) pm out rc pid kids n tx want
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/postgres" ]; then
		bad "postgres: no /usr/lib/postgresql/*/bin/postgres (package postgresql-15)"; return
	fi
	if [ "$(id -u)" -eq 0 ]; then
		if ! id -u postgres >/dev/null 2>&1; then
			bad "postgres: running as root and there is no 'postgres' user to run the server as"; return
		fi
		as_pg=(runuser -u postgres --)
		if ! out=$("${as_pg[@]}" true 2>&1); then
			bad "postgres: cannot run commands as the postgres user (runuser): $out"; return
		fi
	fi
	mkdir "$d"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$d"
	local target=$lib
	if ! "${as_pg[@]}" test -r "$lib"; then
		# The postgres user cannot read the build directory: a copy.
		cp "$lib" "$d/libhugezero.so" && chmod 644 "$d/libhugezero.so"
		target=$d/libhugezero.so
	fi
	pg() { "${as_pg[@]}" timeout 60 "$pg_bin/$1" -h "$d" -p "$port" -U postgres "${@:2}"; }
	psql_q() { pg psql -d postgres -XAtq -v ON_ERROR_STOP=1 "$@"; }

	if ! out=$("${as_pg[@]}" timeout 60 "$pg_bin/initdb" -D "$d/data" -A trust -U postgres \
		-E UTF8 --locale=C --no-sync 2>&1); then
		bad "postgres: initdb: $(printf '%s' "$out" | tail -3)"; return
	fi
	# Only the server processes get the library (and write reports):
	# pg_ctl starts this instead of postgres.
	cat >"$d/postgres-hz" <<-EOF
		#!/bin/sh
		export LD_PRELOAD='$target' HUGEZERO_STATS='$d/stats' LD_DEBUG=bindings LD_DEBUG_OUTPUT='$d/bind'
		exec '$pg_bin/postgres' "\$@"
	EOF
	chmod 755 "$d/postgres-hz"
	pg_data=$d/data
	if ! out=$("${as_pg[@]}" timeout 60 "$pg_bin/pg_ctl" -D "$d/data" -p "$d/postgres-hz" -l "$d/log" \
		-o "-p $port -k $d -c listen_addresses=''" -w -t 40 start 2>&1); then
		bad "postgres: pg_ctl start: $out $(tail -5 "$d/log" 2>/dev/null)"; return
	fi
	pm=$(head -1 "$d/data/postmaster.pid")
	ok "postgres: $("$pg_bin/postgres" --version) up on $d/.s.PGSQL.$port (postmaster $pm)"
	mapped "$pm" "postmaster" && ok "postgres: library mapped in the postmaster"
	bound "$d/bind.*" "$(printf '%s' "$pg_bin/postgres" | sed 's/[.]/\\./g')" "postgres" malloc free memset

	if out=$(pg pgbench -i -s 5 -q postgres 2>&1); then ok "postgres: pgbench -i -s 5"
	else bad "postgres: pgbench -i: $(printf '%s' "$out" | tail -3)"; fi
	pg pgbench -c 4 -j 2 -T 8 postgres >"$d/bench.out" 2>&1 &
	pid=$!
	# While it runs: every child of the postmaster (4 client backends and
	# the auxiliary processes) has the library mapped.
	children() { # read with builtins only: an awk per process took seconds on a busy machine
		local p s f
		for p in /proc/[0-9]*; do
			read -r s 2>/dev/null <"$p/stat" || continue
			read -r -a f <<<"${s##*) }" # after the command's name: state, ppid, ...
			[ "${f[1]}" = "$pm" ] && echo "${p#/proc/}"
		done
	}
	backends() { [ "$(for c in $(children); do tr '\0' ' ' <"/proc/$c/cmdline"; echo; done |
		grep -c '^postgres: postgres postgres \[local\]')" -ge 4 ]; }
	if wait_until 20 "$pid" backends; then
		# Each child's maps and command line read at once; a child that
		# exits first (an autovacuum worker) is passed over, but pgbench's
		# 4 backends, which live until it ends, must all be among those read.
		local c maps cmd seen=0 nread=0 n=0
		for c in $(children); do
			maps=$(cat "/proc/$c/maps" 2>/dev/null) || continue
			cmd=$(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null) || continue
			[ -n "$maps" ] || continue
			nread=$((nread + 1))
			[[ $cmd == "postgres: postgres postgres [local]"* ]] && seen=$((seen + 1))
			grep -qF " $target" <<<"$maps" || { bad "postgres child $c ($cmd): library not mapped"; n=$((n + 1)); }
		done
		if [ $n -eq 0 ] && [ $seen -ge 4 ]; then
			ok "postgres: library mapped in all $nread children of the postmaster, $seen of them pgbench's backends"
		elif [ $seen -lt 4 ]; then
			bad "postgres: $seen of pgbench's 4 backends read among $nread children"
		fi
	else
		bad "postgres: pgbench's 4 backends never seen"
	fi
	wait "$pid"; rc=$?
	tx=$(awk '/^number of transactions actually processed:/ { print $NF }' "$d/bench.out")
	if [ $rc -eq 0 ] && [ "${tx:-0}" -gt 0 ] && grep -q '^number of failed transactions: 0 ' "$d/bench.out"; then
		ok "postgres: pgbench -c 4 -j 2 -T 8: $tx transactions, $(grep -o 'tps = [0-9.]*' "$d/bench.out")"
	else
		bad "postgres: pgbench: exit $rc: $(tail -5 "$d/bench.out" | tr '\n' ' ')"
	fi
	# pgbench's invariant: every balance sum equals the history's.
	out=$(psql_q -c "select (select sum(abalance) from pgbench_accounts) = h.s
		and (select sum(bbalance) from pgbench_branches) = h.s
		and (select sum(tbalance) from pgbench_tellers) = h.s,
		(select count(*) from pgbench_accounts), h.n
		from (select coalesce(sum(delta), 0) s, count(*) n from pgbench_history) h" 2>&1)
	if [ "$out" = "t|500000|${tx:-}" ]; then ok "postgres: balances consistent over $tx transactions"
	else bad "postgres: consistency: '$out', want 't|500000|$tx'"; fi

	want="100000|5000050000|$(awk 'BEGIN { for (g = 1; g <= 100000; g++) s += g % 3000; print s }')|100000"
	out=$(psql_q -c "create table t as select g, md5(g::text) m, repeat('x', g % 3000) p
		from generate_series(1, 100000) g" \
		-c "select count(*), sum(g), sum(length(p)), count(distinct m) from t" 2>&1)
	if [ "$out" = "$want" ]; then ok "postgres: table of known data: $out"
	else bad "postgres: table of known data: '$out', want '$want'"; fi
	# A 40 MB string built and hashed in one backend.
	want=$(yes ab | tr -d '\n' | head -c 40000000 | md5sum | cut -d' ' -f1)
	out=$(psql_q -c "select md5(repeat('ab', 20000000))" 2>&1)
	if [ "$out" = "$want" ]; then ok "postgres: md5 of a 40 MB string"
	else bad "postgres: md5 of a 40 MB string: '$out', want '$want'"; fi
	# Sorts of 2 million rows in memory (large mallocs); the window sum
	# checks the order: sum of g * (N + 1 - g) = N(N+1)(N+2)/6.
	n=2000000
	want="$((n * (n + 1) * (n + 2) / 6))|$n"
	out=$(psql_q -c "set work_mem = '256MB'" \
		-c "select sum(g::bigint * rn), count(*) from
		(select g, row_number() over (order by g desc) rn from generate_series(1, $n) g) s" 2>&1)
	if [ "$out" = "$want" ]; then ok "postgres: 2M-row sort with work_mem 256MB: $out"
	else bad "postgres: 2M-row sort: '$out', want '$want'"; fi
	out=$(psql_q -c "set work_mem = '256MB'" -c "explain (analyze, costs off, timing off, summary off)
		select count(*) from (select * from generate_series(1, $n) g order by g desc) s" 2>&1)
	if printf '%s\n' "$out" | grep -q 'Sort Method: quicksort'; then
		ok "postgres: in-memory sort ($(printf '%s\n' "$out" | grep -o 'Sort Method: .*'))"
	else
		bad "postgres: sort not in memory: $(printf '%s' "$out" | tr '\n' ' ')"
	fi

	if out=$("${as_pg[@]}" timeout 60 "$pg_bin/pg_ctl" -D "$d/data" -m fast -w -t 40 stop 2>&1) &&
		gone 10 "$pm"; then
		ok "postgres: pg_ctl stop -m fast"
	else
		bad "postgres: pg_ctl stop: $out"
	fi
	if grep -q 'database system is shut down' "$d/log" &&
		! grep -qE 'terminated by signal|PANIC|was terminated' "$d/log"; then
		ok "postgres: log shows a clean shutdown and no crashed process"
	else
		bad "postgres: log: $(grep -E 'terminated|PANIC|FATAL' "$d/log" | head -5 | tr '\n' ' ')"
	fi
	pg_data=''
	# The postmaster and at least pgbench's 4 backends reported at exit.
	n=$(grep -l '^malloc.small.calls ' "$d"/stats.* 2>/dev/null | wc -l)
	if [ "$n" -ge 5 ]; then ok "postgres: $n server processes wrote reports"
	else bad "postgres: $n server processes wrote reports, want >= 5 (postmaster and backends)"; fi
	served "$d" malloc.small.calls 1000 "postgres"
	served "$d" malloc.large.calls 2 "postgres"
	served "$d" memset.large.calls 1 "postgres"
}

# ---- A JVM: signal handlers, many threads; direct buffers are malloc'ed
# and cleared natively. The checksum must match a run without the library.
run_java() {
	local d=$work/java out rc
	if ! command -v java >/dev/null || ! command -v javac >/dev/null; then
		bad "java: java or javac not installed"; return
	fi
	mkdir "$d"
	if ! out=$(timeout 60 javac -d "$d" "$src/DirectBuffers.java" 2>&1); then
		bad "java: javac: $out"; return
	fi
	local opts=(-XX:MaxDirectMemorySize=1g -cp "$d" DirectBuffers)
	(cd "$d" && timeout 60 java "${opts[@]}" >"$d/plain.out" 2>"$d/plain.err")
	rc=$?
	if [ $rc -ne 0 ]; then bad "java without the library: exit $rc: $(tail -3 "$d/plain.err")"; return; fi
	(cd "$d" && timeout 60 env HUGEZERO_STATS="$d/stats" LD_PRELOAD="$lib" LD_DEBUG=bindings \
		LD_DEBUG_OUTPUT="$d/bind" java "${opts[@]}" >"$d/hz.out" 2>"$d/hz.err")
	rc=$?
	if [ $rc -eq 0 ] && cmp -s "$d/plain.out" "$d/hz.out" && [ "$(tail -1 "$d/hz.out")" = ok ]; then
		ok "java: 4 threads of direct buffers, $(head -1 "$d/hz.out") as without the library"
	else
		bad "java: exit $rc, output '$(tr '\n' ' ' <"$d/hz.out")' (without: '$(tr '\n' ' ' <"$d/plain.out")'): $(tail -3 "$d/hz.err")"
	fi
	if ls "$d"/hs_err_pid*.log >/dev/null 2>&1; then
		bad "java: JVM crash log: $(head -c 400 "$d"/hs_err_pid*.log)"
	fi
	bound "$d/bind.*" '[^ ]*/libjvm\.so' "java (libjvm.so)" malloc free memset
	served "$d" malloc.small.calls 1000 "java"
	served "$d" malloc.large.calls 100 "java"
	served "$d" memset.large.calls 100 "java"
}

run_redis
run_postgres
run_java

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
