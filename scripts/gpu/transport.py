"""Carry a trained verifier back from a GPU machine whose returned files are capped (16 MiB each, 64 MiB in all).

A run with ``freeze_word_embeddings`` leaves the token table as the base model's, so only the rest travels: the
other weights in fp16, in two parts of about 11 MB, and each model's json files in one tarball. ``unpack``
rebuilds the model folder from the base model's token table and tokenizer.

    python scripts/gpu/transport.py pack OUT MODEL_DIR [MODEL_DIR ...]       # on the GPU machine
    python scripts/gpu/transport.py unpack PARTS_DIR NAME BASE_DIR DEST_DIR   # here (NAME: MODEL_DIR's last '-' part)
"""

from __future__ import annotations

import argparse
import shutil
import tarfile
from pathlib import Path

TABLE = "word_embeddings.weight"
META_FILES = ("calibration.json", "training_report.json", "config.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def short_name(folder: Path) -> str:
    """``models/nli-minilm-l6-joint-c`` -> ``c``: the name a model's parts carry."""
    return folder.name.rsplit("-", 1)[-1]


def pack(out: Path, folders: list[Path]) -> list[Path]:
    """Write each model's weights but the token table (fp16, two parts) and a tarball of their json files."""
    from safetensors.torch import load_file, save_file

    written = []
    with tarfile.open(out / "meta.tar.gz", "w:gz") as tar:
        for folder in folders:
            name = short_name(folder)
            for f in META_FILES:
                if (folder / f).is_file():
                    tar.add(folder / f, arcname=f"{name}/{f}")
            weights = {k: v.half().contiguous() for k, v in load_file(str(folder / "model.safetensors")).items()
                       if not k.endswith(TABLE)}
            keys = sorted(weights)
            for part, chosen in enumerate((keys[:len(keys) // 2], keys[len(keys) // 2:])):
                path = out / f"{name}_part{part}.safetensors"
                save_file({k: weights[k] for k in chosen}, str(path))
                written.append(path)
    return written + [out / "meta.tar.gz"]


def unpack(parts: Path, name: str, base: Path, dest: Path) -> Path:
    """The model folder ``dest``: ``base``'s token table and tokenizer, the parts' weights, the json files."""
    from safetensors.torch import load_file, save_file

    weights = load_file(str(base / "model.safetensors"))
    trained: dict = {}
    for part in (0, 1):
        trained.update(load_file(str(parts / f"{name}_part{part}.safetensors")))
    left = set(weights) - set(trained)
    if left != {k for k in weights if k.endswith(TABLE)}:
        raise ValueError(f"{parts}: the parts of {name!r} lack {sorted(left)[:3]}")
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
    p.add_argument("folders", type=Path, nargs="+")
    u = sub.add_parser("unpack")
    u.add_argument("parts", type=Path)
    u.add_argument("name")
    u.add_argument("base", type=Path)
    u.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "pack":
        for path in pack(args.out, args.folders):
            print(path.name, path.stat().st_size)
    else:
        print(f"rebuilt {unpack(args.parts, args.name, args.base, args.dest)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
