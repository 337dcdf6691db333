"""Carry trained verifiers back from a GPU machine whose returned files are capped (8 files, 16 MiB each, 64 MiB in all).

Only the weights a run changed travel: every tensor that differs from the base model's (a frozen token table or
frozen lower layers stay behind), in fp16, in parts of at most ``PART_BYTES``, and each model's json files in
one tarball. ``unpack`` rebuilds the model folder from the base model's other weights and tokenizer.

    python scripts/gpu/transport.py pack OUT BASE_DIR MODEL_DIR [MODEL_DIR ...]   # on the GPU machine
    python scripts/gpu/transport.py unpack PARTS_DIR NAME BASE_DIR DEST_DIR       # here (NAME: MODEL_DIR's last '-' part)
"""

from __future__ import annotations

import argparse
import shutil
import tarfile
from pathlib import Path

PART_BYTES = 15 * 2**20
META_FILES = ("calibration.json", "training_report.json", "config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def short_name(folder: Path) -> str:
    """``models/nli-minilm-l6-gpu-c`` -> ``c``: the name a model's parts carry."""
    return folder.name.rsplit("-", 1)[-1]


def changed_weights(folder: Path, before: dict) -> dict:
    """The model's fp16 tensors that differ from ``before`` (the base model's, fp16; all of those it lacks or
    shapes otherwise)."""
    import torch
    from safetensors.torch import load_file

    out = {}
    for key, value in load_file(str(folder / "model.safetensors")).items():
        value = value.half().contiguous()
        old = before.get(key)
        if old is None or old.shape != value.shape or not torch.equal(old, value):
            out[key] = value
    return out


def _parts(weights: dict) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    size = 0
    for key in sorted(weights):
        nbytes = weights[key].numel() * weights[key].element_size()
        if parts[-1] and size + nbytes > PART_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(key)
        size += nbytes
    return parts


def pack(out: Path, base: Path, folders: list[Path]) -> list[Path]:
    """Write each model's changed weights (fp16, in parts) and a tarball of every model's json files."""
    from safetensors.torch import load_file, save_file

    before = {k: v.half() for k, v in load_file(str(base / "model.safetensors")).items()}
    written = []
    with tarfile.open(out / "meta.tar.gz", "w:gz") as tar:
        for folder in folders:
            name = short_name(folder)
            for f in META_FILES:
                if (folder / f).is_file():
                    tar.add(folder / f, arcname=f"{name}/{f}")
            weights = changed_weights(folder, before)
            for part, chosen in enumerate(_parts(weights)):
                path = out / f"{name}_part{part}.safetensors"
                save_file({k: weights[k] for k in chosen}, str(path))
                written.append(path)
    return written + [out / "meta.tar.gz"]


def unpack(parts: Path, name: str, base: Path, dest: Path) -> Path:
    """The model folder ``dest``: ``base``'s weights and tokenizer, overwritten by the parts' weights, and the
    json files."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(base / "model.safetensors"))
    files = sorted(parts.glob(f"{name}_part*.safetensors"))
    if not files:
        raise ValueError(f"{parts}: no parts of {name!r}")
    trained: dict = {}
    for path in files:
        trained.update(load_file(str(path)))
    for key, value in trained.items():
        if key not in weights or weights[key].shape != value.shape:
            raise ValueError(f"{parts}: {key} of {name!r} does not fit {base}")
    dest.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FILES:
        shutil.copy(base / f, dest / f)
    with tarfile.open(parts / "meta.tar.gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name in {f"{name}/{f}" for f in META_FILES}:
                (dest / Path(member.name).name).write_bytes(tar.extractfile(member).read())
    weights.update(trained)
    save_file({k: v.half().contiguous() for k, v in weights.items()}, str(dest / "model.safetensors"),
              metadata={"format": "pt"})
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("pack")
    p.add_argument("out", type=Path)
    p.add_argument("base", type=Path)
    p.add_argument("folders", type=Path, nargs="+")
    u = sub.add_parser("unpack")
    u.add_argument("parts", type=Path)
    u.add_argument("name")
    u.add_argument("base", type=Path)
    u.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "pack":
        for path in pack(args.out, args.base, args.folders):
            print(path.name, path.stat().st_size)
    else:
        print(f"rebuilt {unpack(args.parts, args.name, args.base, args.dest)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
