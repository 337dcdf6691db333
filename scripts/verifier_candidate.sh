#!/usr/bin/env bash
# Measure a verifier candidate beside the shipped one, on issue 67's development figures, without touching the tree.
#
#   scripts/verifier_candidate.sh MODEL_DIR OUT_DIR [--quick]
#
# MODEL_DIR is a model `cns train-verifier` wrote. A scratch git worktree of HEAD gets the candidate's weights in
# models/nli-minilm-l6 (its model card stays) and a grounding fusion refitted for it (scripts/fit_grounding.py
# --cited, as the shipped one was fitted); every benchmark then runs there, beside the shipped model where the
# benchmark can (claim_errors.py first with the shipped fusion for both models, then the candidate with its own). The figures land in OUT_DIR, one text file per benchmark, with the refitted fusion; the
# worktree is removed at the end, so the checkout (its model and fusion) never changes. --quick: small samples,
# to see that it all runs. CNS_DATA_DIR must name the shared data. About 40 minutes on the 2-core CPU.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 MODEL_DIR OUT_DIR [--quick]" >&2
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
QUICK=${3:-}
PY="$ROOT/.venv/bin/python"
SHIPPED="$ROOT/models/nli-minilm-l6"
for file in config.json model.safetensors calibration.json; do
    [ -f "$MODEL/$file" ] || { echo "$MODEL: no $file (not a model cns train-verifier wrote)" >&2; exit 2; }
done
[ -n "${CNS_DATA_DIR:-}" ] || { echo "CNS_DATA_DIR: not set (the shared data folder)" >&2; exit 2; }

SCRATCH=$(mktemp -d)
TREE="$SCRATCH/tree"
cleanup() { git -C "$ROOT" worktree remove --force "$TREE" >/dev/null 2>&1 || true; rm -rf "$SCRATCH"; }
trap cleanup EXIT
git -C "$ROOT" worktree add --detach --quiet "$TREE" HEAD
ln -s "$SHIPPED" "$SCRATCH/shipped"          # the shipped model under a name of its own in the tables
cp "$MODEL"/config.json "$MODEL"/model.safetensors "$MODEL"/calibration.json "$MODEL"/tokenizer*.json \
    "$TREE/models/nli-minilm-l6/"
[ -f "$MODEL/training_report.json" ] && cp "$MODEL/training_report.json" "$TREE/models/nli-minilm-l6/"

if [ "$QUICK" = "--quick" ]; then
    FIT=(--limit 40); CLAIMS=(--limit 10 --nli-limit 60); ANSWERS=(--limit 20 --long-limit 10)
else
    FIT=(); CLAIMS=(--limit 40 --nli-limit 500); ANSWERS=(--limit 100 --long-limit 60)
fi
export PYTHONPATH="$TREE" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 CNS_STATE_DIR="$SCRATCH/state"
cd "$TREE"
step() { echo "== $1 ($(date +%H:%M:%S))"; }

step "opposites probe"
"$PY" benchmarks/opposites_probe.py --model "$TREE/models/nli-minilm-l6" --model "$SHIPPED" --verbose \
    > "$OUT/opposites_probe.txt"
step "claim errors, SciFact and generic NLI: the candidate (nli-minilm-l6) and the shipped model, the shipped fusion"
"$PY" benchmarks/claim_errors.py --model "$SCRATCH/shipped" "${CLAIMS[@]}" > "$OUT/claim_errors.txt" 2>&1
step "grounding fusion refitted for the candidate"
"$PY" scripts/fit_grounding.py --cited "${FIT[@]}" > "$OUT/fit_grounding.txt" 2>&1
cp config/grounding_fusion.yaml "$OUT/grounding_fusion.yaml"
step "claim errors again: the candidate with its own fusion"
"$PY" benchmarks/claim_errors.py "${CLAIMS[@]}" > "$OUT/claim_errors_refitted.txt" 2>&1
step "answers: the association probe, the demo's facts and the development sets"
"$PY" benchmarks/answers.py "${ANSWERS[@]}" --trust-limit 0 --beside-model "$SHIPPED" \
    --sets NQ301 EVOUNA SAF swaps SQuALITY > "$OUT/answers.txt" 2>&1
step "the bundled examples as a reader ranks and judges them"
"$PY" benchmarks/reader_ranking.py > "$OUT/reader_ranking.txt" 2>&1 || true
"$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/test_reader_verdicts.py tests/test_verdict_story.py \
    > "$OUT/reader_verdicts.txt" 2>&1 || true
step "done: $OUT"
