#!/bin/bash
# Issue 20's measure through `csis watch` itself: a reference tree, then
# one save each of 14 distinct files, 2.5 s apart; prints what watch
# reports ("re-planned in X ms"). Usage, from the repository root:
#   cargo build --release -p csis -p csis-benches --bins
#   benches/scripts/watch-first-saves.sh [DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$(mktemp -d)}
rm -rf "$dir" && "$repo/target/release/gen-tree" "$dir" --reference >/dev/null
cd "$dir"
out=$(mktemp)
"$repo/target/release/csis" watch >"$out" 2>&1 &
watcher=$!
trap 'kill $watcher 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do grep -q "Watching for changes" "$out" && break; sleep 1; done
sleep 3
save() { # FILE FROM TO: replace the first FROM by TO, then let watch re-plan
    python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
assert old in text, (path, old)
open(path, "w").write(text.replace(old, new, 1))
PY
    sleep 2.5
}
for chain in 0 100 200 300 400; do
    for at in 0 3; do
        save "$(printf 'images/chain-%04d/img-%05d.yml' $chain $((chain * 4 + at)))" ' step 0"' ' step 0 saved"'
    done
done
save groups/users-033.yml 'last_name: Last6600}' 'last_name: Saved}'
save groups/users-066.yml 'last_name: Last13200}' 'last_name: Saved}'
save storages/storages-000.yml $'  - name: vol-0000\n' $'  - name: vol-0000\n    description: saved\n'
save instances/hosts-0000.yml $'  - name: host-00000\n' $'  - name: host-00000\n    description: saved\n'
sleep 2
grep "re-planned in" "$out"
