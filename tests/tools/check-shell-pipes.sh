#!/usr/bin/env bash
# A shell script under `set -o pipefail` must not end a pipeline in `grep -q`
# (or `head`): grep stops at the first match, the writer dies of SIGPIPE once
# its output outgrows the pipe, and the pipeline fails although the text was
# there. dtmpirun said Open MPI's Fortran calls bypass dtmpi for that reason
# once the library's symbol list grew (2026-11-26); tools_scope_gpu skipped
# its rows the same way before. Checks every shell script of the tree
# (tools/dtmpirun.in included); `grep -q <<<"$(...)"` is the safe form.
#   check-shell-pipes.sh SOURCE_DIR
set -uo pipefail
src=$1
bad=0
while IFS= read -r f; do
  grep -qE 'set -[a-z]*o pipefail|set -o pipefail' "$f" || continue
  # a pipe into grep -q / grep -c ... | head, outside comments
  if hits=$(grep -nE '^[^#]*([^|]|^)\|[[:space:]]*grep[[:space:]]+-[a-zA-Z]*q' "$f"); then
    echo "FAIL: $f: a pipeline ending in grep -q under pipefail:"
    echo "$hits"
    bad=1
  fi
done < <(cd "$src" && git ls-files '*.sh' '*.in' 'scripts/*' 'tools/*' 'tests/*' '.ci/*' 2>/dev/null |
           sort -u | sed "s|^|$src/|" | while read -r p; do
             [ -f "$p" ] && grep -qE '^#!.*(bash|sh)' <<<"$(head -c 200 "$p")" && echo "$p"
           done)
[ $bad -eq 0 ] && echo "ok: no pipeline ends in grep -q under pipefail"
exit $bad
