#!/bin/bash
# A verifier shipped before, restored from git instead of retrained, for the stages that train from it:
#   bash scripts/verifier_restore.sh 3   -> models/nli-minilm-l6-stage3 (shipped until 2026-11-27): stage 5
#                                           (config/verifier_train_joint.yaml) trains from it and blends into it
#   bash scripts/verifier_restore.sh 5   -> models/nli-minilm-l6-stage5-shipped (shipped until 2026-11-28): stages
#                                           6-8 (config/verifier_train_stage*.yaml) mine its confusions and train from it
#   bash scripts/verifier_restore.sh 8   -> models/nli-minilm-l6-stage8 (shipped until 2026-11-28): stages 9-11
#                                           mine its confusions and train from it (stage 11 blends into it)
#   bash scripts/verifier_restore.sh 11  -> models/nli-minilm-l6-stage11-shipped (shipped until stage 13, 2026-11-28):
#                                           stages 12 and 13 (config/verifier_train_stage1[23].yaml) train from it
#   bash scripts/verifier_restore.sh 13  -> models/nli-minilm-l6-stage13-shipped (shipped from 2026-11-28)
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
  3) COMMIT=29761bc; DEST=models/nli-minilm-l6-stage3 ;;          # the last commits whose models/nli-minilm-l6
  5) COMMIT=d1bf32a; DEST=models/nli-minilm-l6-stage5-shipped ;;  # is that stage
  8) COMMIT=f3ccf7e; DEST=models/nli-minilm-l6-stage8 ;;
  11) COMMIT=b695fee; DEST=models/nli-minilm-l6-stage11-shipped ;;
  13) COMMIT=8994aa0; DEST=models/nli-minilm-l6-stage13-shipped ;;
  *) echo "usage: bash scripts/verifier_restore.sh 3|5|8|11|13 (the shipped stage to restore)" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$COMMIT" models/nli-minilm-l6 | tar -x -C "$tmp"
rm -rf "$DEST"
mv "$tmp/models/nli-minilm-l6" "$DEST"
echo "stage $1 restored in $DEST"
