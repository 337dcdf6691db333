#!/bin/bash
# On a lent GPU machine ($OUT receives the results): the verifier's one recipe (the settings .gpu/ was prepared for
# by scripts/gpu/prepare.sh) from the public base carried in .gpu/base, in one command: its pilot, the mining and
# the main run, then the model packed for the trip back (scripts/gpu/transport.py; a model trained from the base
# travels whole, about 45 MB in three parts). Here: transport.py unpack DIR gpu .gpu/base models/nli-minilm-l6-gpu
#   bash scripts/gpu/train_verifier.sh [EXTRA CLI OPTIONS of cns train-verifier]
# MAX_SECONDS (default 480) stops the main run's epochs and writes the model as it stands (its training report says
# so: then it is not the recipe's model); DEVICE=cpu tries the script on a machine without a GPU.
set -u
cd "$(dirname "$0")/../.."
SETTINGS=$(cat .gpu/settings)
python3 -c "import pydantic" 2>/dev/null ||
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/scripts/gpu/embedder:$PWD CNS_GPU_BASE=$PWD/.gpu/base CNS_DATA_DIR=/tmp/data CNS_WORDNET_DIR=/tmp/data/wordnet \
  HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
python3 -c "import tarfile; tarfile.open('.gpu/data.tar.xz').extractall('/tmp/data')" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
out=models/nli-minilm-l6-gpu
start=$(date +%s)
python3 -m cns_core.cli train-verifier --settings "$SETTINGS" --output $out --device "${DEVICE:-cuda}" --threads 8 \
  --max-seconds "${MAX_SECONDS:-480}" --quiet "$@" > "$OUT/log.txt" 2>&1
echo "exit $? after $(( $(date +%s) - start )) s" >> "$OUT/log.txt"
tail -n 5 "$OUT/log.txt"
python3 scripts/gpu/transport.py pack "$OUT" .gpu/base $out
