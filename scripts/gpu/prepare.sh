#!/bin/bash
# Build .gpu/ (git-ignored through .git/info/exclude) for scripts/gpu/train_verifier.sh on a GPU machine that
# has PyTorch and transformers but not pydantic, the embedder or the shared data: the wheels training imports,
# the data files SETTINGS reads as one xz tarball, and the mined pairs' cache (mine it here first: the mining
# needs the embedder). Usage: SETTINGS=config/verifier_train.yaml bash scripts/gpu/prepare.sh
# The recipe starts from the public base, which does not travel yet: open work, docs/development.md.
set -eu
cd "$(dirname "$0")/../.."
SETTINGS=${SETTINGS:-config/verifier_train.yaml}
DATA=${CNS_DATA_DIR:-../shared/data}
# read from the settings once: the run's mined-pairs folder, then the files it trains on and the questions it
# keeps out (relative to the shared data)
read=$(CNS_DATA_DIR="$DATA" .venv/bin/python - "$SETTINGS" <<'PY'
import sys
from cns_core.config import data_dir
from cns_core.training.nli import load_train_settings
settings, root = load_train_settings(path=sys.argv[1]), data_dir()
paths = {settings.source_path(s) for s in settings.sources} | {root / q for q in settings.exclude_questions}
print(settings.checkpoint_path / "mined")
print("\n".join(sorted(str(p.relative_to(root)) for p in paths)))
PY
)
MINED=${MINED:-$(head -n 1 <<< "$read")}
files=$(tail -n +2 <<< "$read")
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu/mined && mkdir -p .gpu/whl .gpu/mined
versions=$(.venv/bin/python -c "import importlib.metadata as m; print(' '.join(f'{n}=={m.version(n)}' for n in
  ('pydantic', 'pydantic_core', 'annotated_types', 'typing_inspection', 'typing_extensions')))")
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl $versions
tar -cJf .gpu/data.tar.xz -C "$DATA" $files
ls "$MINED"/*.jsonl.gz > /dev/null || { echo "no mined pairs in $MINED: mine them here first (docs/development.md)"; exit 1; }
cp "$MINED"/*.jsonl.gz .gpu/mined/
echo "$SETTINGS" > .gpu/settings
du -sh .gpu
