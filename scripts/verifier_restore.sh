#!/bin/bash
# A verifier shipped before, restored from git instead of retrained: a later stage trains from it, mines its
# confusions or blends back into it.
#   bash scripts/verifier_restore.sh 3   -> models/nli-minilm-l6-stage3          (shipped until 2026-11-27; stage 5's base)
#   bash scripts/verifier_restore.sh 5   -> models/nli-minilm-l6-stage5-shipped  (shipped until 2026-11-28; stage 6's base)
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
  3) COMMIT=29761bc; DEST=models/nli-minilm-l6-stage3 ;;           # the last commit whose models/nli-minilm-l6 is stage 3
  5) COMMIT=dbec7a1; DEST=models/nli-minilm-l6-stage5-shipped ;;   # ... is stage 5
  *) echo "usage: bash scripts/verifier_restore.sh 3|5" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$COMMIT" models/nli-minilm-l6 | tar -x -C "$tmp"
rm -rf "$DEST"
mv "$tmp/models/nli-minilm-l6" "$DEST"
echo "stage $1 restored in $DEST"
