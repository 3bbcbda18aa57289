#!/usr/bin/env bash
# Review rev50: C reproducers of defects D1 and D2 (see each file's top
# comment), built against the committed header and the debug staticlib with
# AddressSanitizer and UBSan. Prints each case's outcome; exits 1 if any
# defect reproduced (on the code reviewed, it does), 0 if all hold.
#   bash integrations/ffi/tests/c/review/run.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(cd "$here/../../.." && pwd)
root=$(cd "$crate/../.." && pwd)
target=${LEAP_FFI_C_TARGET:-$root/target/ffi-c}
cargo build --quiet --manifest-path "$root/Cargo.toml" -p leaparray-ffi --target-dir "$target" || exit 2
out=$target/c-review
mkdir -p "$out"
cc=${CC:-gcc}
flags=(-std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
  -fno-omit-frame-pointer -I "$crate/include")
lib=("$target/debug/libleaparray_ffi.a" -lpthread -ldl -lm)
defects=0
for prog in signal_reentry copy_collision; do
  "$cc" "${flags[@]}" "$here/$prog.c" "${lib[@]}" -o "$out/$prog" || exit 2
done
# The release staticlib too: no debug assertion stops the corrupted table.
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p leaparray-ffi --target-dir "$target" || exit 2
"$cc" -std=c11 -O1 -g -I "$crate/include" "$here/signal_reentry.c" "$target/release/libleaparray_ffi.a" \
  -lpthread -ldl -lm -o "$out/signal_reentry_release" || exit 2
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {
  echo "--- $*"
  "$@" 2>&1 | grep -vE '^\s+[0-9]+: +0x|^\s+at |^note:' | head -20
  local rc=${PIPESTATUS[0]}
  echo "--- exit $rc"
  [ "$rc" -eq 0 ] || defects=$((defects + 1))
}
run "$out/signal_reentry"
run "$out/signal_reentry_release"
run "$out/copy_collision" 1
run "$out/copy_collision" 2
echo "review: $defects of 4 runs showed a defect"
[ "$defects" -eq 0 ]
