#!/bin/bash
# On a GPU machine (run from anywhere; $OUT receives the results): the settings .gpu/ was prepared for
# (scripts/gpu/prepare.sh; SETTINGS= another) in one or more variants side by side on the one GPU, each given as
# NAME "EXTRA CLI OPTIONS", then every model packed for the trip back (scripts/gpu/transport.py).
#   bash scripts/gpu/train_verifier.sh c "" d "--learning-rate 1e-5" e "--settings .gpu/variants/e.yaml"
# A model trained with frozen layers comes back as the tensors it changed (about 11 MB), a whole one in two parts.
# The base model must be in the checkout (what travels): BASE (default models/nli-minilm-l6, the shipped model)
# is given to each run as --base-model and --interpolate-with (a variant's own options come after and win), and
# the parts are the tensors that differ from it. MAX_SECONDS (default 270) stops each run and writes its model;
# DEVICE=cpu tries the whole script on a machine without a GPU (a dry run with a small MAX_SECONDS).
set -u
cd "$(dirname "$0")/../.."
BASE=${BASE:-models/nli-minilm-l6}
SETTINGS=${SETTINGS:-$(cat .gpu/settings)}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 CNS_DATA_DIR=/tmp/data
python3 -c "import tarfile; tarfile.open('.gpu/data.tar.xz').extractall('/tmp/data')" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
train() {   # NAME EXTRA-OPTIONS
  local name=$1 out=models/nli-minilm-l6-gpu-$1
  mkdir -p $out.checkpoint/mined && cp .gpu/mined/*.jsonl.gz $out.checkpoint/mined/
  python3 -m cns_core.cli train-verifier --settings "$SETTINGS" --output $out --device "${DEVICE:-cuda}" \
    --base-model "$BASE" --interpolate-with "$BASE" --threads 4 --max-seconds "${MAX_SECONDS:-270}" --quiet $2 > /tmp/log_$name.txt 2>&1
  echo "$name exit $?" >> /tmp/log_$name.txt
}
folders=()
while [ $# -ge 2 ]; do train "$1" "$2" & folders+=("models/nli-minilm-l6-gpu-$1"); shift 2; done
wait
cat /tmp/log_*.txt > $OUT/log.txt     # one file: a call returns 8 files at most
tail -n 2 /tmp/log_*.txt
python3 scripts/gpu/transport.py pack $OUT "$BASE" "${folders[@]}"
