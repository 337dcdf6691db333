#!/bin/bash
# Build .gpu/ (git-ignored through .git/info/exclude) for scripts/gpu/train_verifier.sh on a GPU machine that
# has PyTorch and transformers but not pydantic, the embedder or the shared data: the wheels training imports,
# the data files of config/verifier_train_joint.yaml as one xz tarball, and the mined pairs' cache (mine it
# here first: the mining needs the embedder). Usage: bash scripts/gpu/prepare.sh   (about 10 MB in .gpu/)
set -eu
cd "$(dirname "$0")/../.."
DATA=${CNS_DATA_DIR:-../shared/data}
MINED=${MINED:-models/nli-minilm-l6.checkpoint/mined}   # the joint settings' checkpoint folder
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
mkdir -p .gpu/whl .gpu/mined
versions=$(.venv/bin/python -c "import importlib.metadata as m; print(' '.join(f'{n}=={m.version(n)}' for n in
  ('pydantic', 'pydantic_core', 'annotated_types', 'typing_inspection', 'typing_extensions')))")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl $versions
tar -cJf .gpu/data.tar.xz -C "$DATA" answer_judgements/evouna.jsonl answer_judgements/saf_en/training \
  answer_judgements/boolq_dev.jsonl answer_judgements/nq301_human.tsv \
  fever_symmetric/symmetric_v0.1_fever_symmetric_full.jsonl fever_symmetric/symmetric_v0.1_fever_symmetric_generated.jsonl \
  fever_symmetric/symmetric_v0.2_fever_symmetric_dev.jsonl nli_train_more/vitaminc_real_test.tsv.gz \
  nli_train_more/vitaminc_synthetic_test.tsv.gz nli_train_more/fm2_dev_test.tsv.gz nli_train_more/covidfact.tsv.gz \
  scifact_train/train_claim_doc_pairs.jsonl nli_train/mnli_train_subset20k_tokenized.tsv.gz \
  nli_train/mnli_dev_matched.tsv.gz nli_train/cad_snli_train.tsv.gz long_answers/summedits long_answers/bump
ls "$MINED"/*.jsonl.gz > /dev/null || { echo "no mined pairs in $MINED: mine them here first (docs/benchmarks.md)"; exit 1; }
cp "$MINED"/*.jsonl.gz .gpu/mined/
du -sh .gpu
