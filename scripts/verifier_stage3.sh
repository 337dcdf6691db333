#!/bin/bash
# The verifier's stage 3 (shipped until stage 5 replaced it), restored from git into models/nli-minilm-l6-stage3:
# stage 5 (config/verifier_train_joint.yaml) trains from it, mines its confusions and blends back into it.
#   bash scripts/verifier_stage3.sh        (or retrain it: cns train-verifier --output models/nli-minilm-l6-stage3)
set -eu
cd "$(dirname "$0")/.."
STAGE3_COMMIT=29761bc     # the last commit whose models/nli-minilm-l6 is stage 3
DEST=models/nli-minilm-l6-stage3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$STAGE3_COMMIT" models/nli-minilm-l6 | tar -x -C "$tmp"
rm -rf "$DEST"
mv "$tmp/models/nli-minilm-l6" "$DEST"
echo "stage 3 restored in $DEST"
