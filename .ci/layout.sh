#!/usr/bin/env bash
# The crate page's "Where things are" table (src/lib.rs) names every file of
# src/ but `lib.rs`, the `mod.rs` files (a folder's public face) and unit
# test files (`tests.rs`, `*_tests.rs`); a file
# added without a row there fails.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(sed -n '/^\/\/! ## Where things are/,/^\/\/! ## /p' src/lib.rs)
missing=0
while IFS= read -r f; do
  base=${f##*/}
  case "$base" in tests.rs | *_tests.rs) continue ;; esac
  dir=${f%/*}; dir=${dir#src}; dir=${dir#/}
  # a file in a folder: the folder (`gate/`, `packed/`) and the file are named
  if ! grep -qF "\`$base\`" <<<"$table" || { [ -n "$dir" ] && ! grep -qF "\`${dir##*/}/\`" <<<"$table"; }; then
    echo "src/lib.rs 'Where things are' does not name $f"; missing=1
  fi
done < <(find src -type f \( -name '*.rs' -o -name '*.md' \) ! -name mod.rs ! -name lib.rs | sort)
[ "$missing" = 0 ] && echo "every file of src/ is in the crate page's table"
