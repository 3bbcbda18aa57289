#!/usr/bin/env bash
# Review rev50: the C test program (tests/c/test.c, which holds) and the D1
# race reproducer (race_wrong_type_init.c) under ThreadSanitizer with the
# Rust side instrumented too: the staticlib built with -Zsanitizer=thread
# and -Zbuild-std (nightly, rust-src), C compiled with gcc -fsanitize=thread
# and linked against rustc's TSan runtime (gcc 12's libtsan lacks
# __tsan_memcpy, which the Rust objects call). Exits 1 if a race or defect
# shows. `bash integrations/ffi/tests/c/review/tsan.sh`
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../../.." && pwd)
root=$(cd "$crate/../.." && pwd)
target=$root/target/rev50-tsan
host=x86_64-unknown-linux-gnu
RUSTFLAGS="-Zsanitizer=thread" cargo +nightly build -q -Zbuild-std --target $host \
  --manifest-path "$root/Cargo.toml" -p leaparray-ffi --target-dir "$target" || exit 2
lib=$target/$host/debug/libleaparray_ffi.a
rt=$(rustc +nightly --print sysroot)/lib/rustlib/$host/lib/librustc-nightly_rt.tsan.a
out=$target/c; mkdir -p "$out"
bad=0
for prog in "$crate/tests/c/test.c" "$here/race_wrong_type_init.c"; do
  name=$(basename "$prog" .c)
  gcc -std=c11 -O1 -g -fsanitize=thread -I "$crate/include" -c "$prog" -o "$out/$name.o" || exit 2
  gcc "$out/$name.o" "$lib" -Wl,--whole-archive "$rt" -Wl,--no-whole-archive -lpthread -ldl -lm -lrt \
    -o "$out/$name" || exit 2
  echo "--- $name"
  TSAN_OPTIONS=halt_on_error=0 "$out/$name" > "$out/$name.log" 2>&1
  rc=$?
  grep -E "WARNING: ThreadSanitizer|^    #[0-3] |FFI C OK|DEFECT|leap_array_init on" "$out/$name.log" | head -14
  echo "--- exit $rc"
  [ $rc -eq 0 ] || bad=$((bad + 1))
done
exit $((bad > 0))
