#!/usr/bin/env bash
# The installed library, as a user builds against it: cmake --install into
# a temporary prefix; the files, the man pages in the command's
# component; the SONAME and its links; a program built
# with pkg-config (shared, and static with Libs.private) and with CMake's
# find_package (hugezero::hugezero, hugezero::static), each run; the
# installed hugezero command preloads the installed library with no
# environment variable and names its version and path; the man pages render
# without warnings, hugezero(7) with every option of the table.
# Usage: install.sh BUILD_DIR SOURCE_DIR OPTIONS_DOC_BINARY
set -u
build=$1 src=$2 optdoc=$3
. "$(dirname "$0")/../util/common.sh"
prefix=$work/prefix
unset HUGEZERO_LIB LD_PRELOAD

if cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
	ok "cmake --install into a temporary prefix"
else
	bad "cmake --install: $(tail -3 "$work/install.log")"
	finish
	exit
fi
libdir=$(dirname "$(find "$prefix" -name 'libhugezero.so.*.*' | head -1)")
so=$libdir/libhugezero.so.0
missing=""
for f in "$so" "$libdir/libhugezero.so" "$libdir/libhugezero.a" "$prefix/include/hugezero.h" \
	"$libdir/pkgconfig/hugezero.pc" "$libdir/cmake/hugezero/hugezero-config.cmake" \
	"$libdir/cmake/hugezero/hugezero-config-version.cmake" "$prefix/bin/hugezero" \
	"$prefix/share/hugezero/hzcli/commands.py" "$prefix/share/man/man1/hugezero.1.gz" \
	"$prefix/share/man/man7/hugezero.7.gz"; do
	[ -e "$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "the files are installed" || bad "missing:$missing"
# The command's component, as its package takes it, holds both man pages.
if cmake --install "$build" --component cli --prefix "$work/cli" >"$work/install.log" 2>&1 &&
	[ -e "$work/cli/share/man/man1/hugezero.1.gz" ] && [ -e "$work/cli/share/man/man7/hugezero.7.gz" ]; then
	ok "the command's component holds hugezero(1) and hugezero(7)"
else
	bad "the command's component: $(tail -3 "$work/install.log") $(find "$work/cli" -path '*/man/*' -type f)"
fi
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = libhugezero.so.0 ] && [ -L "$so" ] && [ -L "$libdir/libhugezero.so" ]; then
	ok "SONAME libhugezero.so.0, .so.0 and .so links to $(readlink "$so")"
else
	bad "SONAME '$soname', links: $(ls -l "$libdir" | grep hugezero)"
fi

export PKG_CONFIG_PATH=$libdir/pkgconfig
consumer=$src/tests/programs/consumer.c
# shellcheck disable=SC2046
if cc -o "$work/pc_shared" "$consumer" $(pkg-config --cflags --libs hugezero) 2>"$work/err" &&
	out=$(LD_LIBRARY_PATH=$libdir "$work/pc_shared") && [ "$(realpath "${out%% *}")" = "$(realpath "$so")" ]; then
	ok "pkg-config --cflags --libs: linked, run, its malloc is the library's ($out)"
else
	bad "pkg-config shared: $(cat "$work/err") ${out:-}"
fi
# shellcheck disable=SC2046
if cc -static -o "$work/pc_static" "$consumer" $(pkg-config --static --cflags --libs hugezero) 2>"$work/err" &&
	out=$("$work/pc_static") && [ "${out%% *}" = static ]; then
	ok "pkg-config --static (Libs.private): a static program, hugezero its allocator ($out)"
else
	bad "pkg-config static: $(cat "$work/err") ${out:-}"
fi

mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.24)
project(consumer C)
find_package(hugezero 0 REQUIRED)
add_executable(shared_consumer $consumer)
target_link_libraries(shared_consumer hugezero::hugezero \${CMAKE_DL_LIBS})
add_executable(static_consumer $consumer)
target_link_libraries(static_consumer hugezero::static \${CMAKE_DL_LIBS})
CM
if cmake -S "$work/cm" -B "$work/cm/b" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cm.log" 2>&1 &&
	cmake --build "$work/cm/b" >>"$work/cm.log" 2>&1 &&
	a=$("$work/cm/b/shared_consumer") && b=$("$work/cm/b/static_consumer") &&
	[ "$(realpath "${a%% *}")" = "$(realpath "$so")" ] && [ "${b%% *}" != "$(realpath "$so")" ]; then
	ok "find_package(hugezero): hugezero::hugezero ($a) and hugezero::static ($b) built and run"
else
	bad "find_package: $(tail -5 "$work/cm.log") ${a:-} ${b:-}"
fi

# The installed command, with no variable pointing it anywhere.
if out=$("$prefix/bin/hugezero" run --stats "$work/r.%p.json" -- /usr/bin/python3 -c \
	'import os; print(os.environ["LD_PRELOAD"])' 2>"$work/err") && [ "$out" = "$so" ] &&
	ls "$work"/r.*.json >/dev/null 2>&1; then
	ok "installed hugezero run preloads the installed library ($out), its report written"
else
	bad "installed hugezero run: '${out:-}' $(cat "$work/err")"
fi
version=$(sed -n 's/^project(hugezero VERSION \([^ )]*\).*/\1/p' "$src/CMakeLists.txt")
if v=$("$prefix/bin/hugezero" --version) && grep -qx "hugezero $version" <<<"$v" &&
	grep -qx "library: $so (hugezero $version)" <<<"$v" &&
	"$prefix/bin/hugezero" info | grep -q "^hugezero $version, library: $so"; then
	ok "hugezero --version and info name $version and $so"
else
	bad "hugezero --version: ${v:-}"
fi

# The man pages, rendered.
for page in "$prefix/share/man/man1/hugezero.1.gz" "$prefix/share/man/man7/hugezero.7.gz"; do
	if MANWIDTH=80 man --warnings -l "$page" >"$work/page.txt" 2>"$work/warn" && [ ! -s "$work/warn" ] &&
		[ "$(wc -l <"$work/page.txt")" -gt 40 ]; then
		ok "man -l $(basename "$page"): $(wc -l <"$work/page.txt") lines, no warning"
	else
		bad "man -l $page: $(head -5 "$work/warn")"
	fi
done
MANWIDTH=200 man -l "$prefix/share/man/man7/hugezero.7.gz" 2>/dev/null >"$work/page7.txt"
absent=""
for o in $("$optdoc" | sed -n 's/^| `\(HUGEZERO_[A-Z0-9_]*\)`.*/\1/p'); do
	grep -q "$o" "$work/page7.txt" || absent="$absent $o"
done
[ -z "$absent" ] && ok "hugezero(7) describes every option of the table" || bad "hugezero(7) lacks:$absent"
finish
