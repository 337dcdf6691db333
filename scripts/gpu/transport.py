"""Carry trained verifiers back from a GPU machine whose returned files are capped (8 files, 16 MiB each, 64 MiB in all).

Only the weights a run changed travel: every tensor that differs from the base model's (a frozen token table or
frozen lower layers stay behind; a model trained from the public base, whose tensors are all new, travels
whole), in fp16, in parts of at most ``PART_BYTES``, and each model's json and tokenizer files and the list of its
tensors in one tarball. ``unpack`` rebuilds the model folder from the parts and the base model's other tensors.

    python scripts/gpu/transport.py pack OUT BASE_DIR MODEL_DIR [MODEL_DIR ...]   # on the GPU machine
    python scripts/gpu/transport.py unpack PARTS_DIR NAME BASE_DIR DEST_DIR       # here (NAME: MODEL_DIR's last '-' part)
    python scripts/gpu/transport.py half MODEL_DIR DEST_DIR                       # a model folder, its weights in fp16
"""

from __future__ import annotations

import argparse
import json
import shutil
import tarfile
from pathlib import Path

PART_BYTES = 15 * 2**20
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
META_FILES = ("calibration.json", "training_report.json", "config.json", *TOKENIZER_FILES)
MANIFEST = "tensors.json"        # every tensor of the model, name -> shape: what the parts and the base must rebuild


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


SLICE = "@rows"          # a tensor larger than a part travels as row slices: NAME@rows0, NAME@rows1, ...


def _sliced(weights: dict) -> dict:
    """``weights`` with every tensor over ``PART_BYTES`` cut into row slices that each fit a part."""
    out = {}
    for key, value in weights.items():
        nbytes = value.numel() * value.element_size()
        if nbytes <= PART_BYTES or value.dim() == 0 or value.shape[0] < 2:
            out[key] = value
            continue
        rows = max(1, value.shape[0] * PART_BYTES // nbytes)
        for i, start in enumerate(range(0, value.shape[0], rows)):
            out[f"{key}{SLICE}{i}"] = value[start:start + rows].contiguous()
    return out


def _joined(carried: dict) -> dict:
    """The row slices of :func:`_sliced` put back together, in order."""
    import torch

    out, slices = {}, {}
    for key, value in carried.items():
        if SLICE in key:
            name, index = key.rsplit(SLICE, 1)
            slices.setdefault(name, {})[int(index)] = value
        else:
            out[key] = value
    for name, parts in slices.items():
        if sorted(parts) != list(range(len(parts))):
            raise ValueError(f"{name}: slices {sorted(set(range(max(parts) + 1)) - set(parts))} were not carried")
        out[name] = torch.cat([parts[i] for i in range(len(parts))])
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
    """Write each model's changed weights (fp16, in parts) and a tarball of every model's json and tokenizer files
    and tensor names."""
    import io

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    before = {k: v.half() for k, v in load_file(str(base / "model.safetensors")).items()}
    written = []
    with tarfile.open(out / "meta.tar.gz", "w:gz") as tar:
        for folder in folders:
            name = short_name(folder)
            for f in META_FILES:
                if (folder / f).is_file():
                    tar.add(folder / f, arcname=f"{name}/{f}")
            with safe_open(str(folder / "model.safetensors"), "pt") as model:
                manifest = json.dumps({k: model.get_slice(k).get_shape() for k in sorted(model.keys())}).encode()
            info = tarfile.TarInfo(f"{name}/{MANIFEST}")
            info.size = len(manifest)
            tar.addfile(info, io.BytesIO(manifest))
            weights = _sliced(changed_weights(folder, before))
            for part, chosen in enumerate(_parts(weights)):
                path = out / f"{name}_part{part}.safetensors"
                save_file({k: weights[k] for k in chosen}, str(path))
                written.append(path)
    return written + [out / "meta.tar.gz"]


def unpack(parts: Path, name: str, base: Path, dest: Path) -> Path:
    """The model folder ``dest``: the parts' weights, and ``base``'s for every other tensor the model lists; its
    json and tokenizer files (``base``'s tokenizer where the tarball has none). A tensor neither carried nor
    fitting in ``base`` is refused, naming it."""
    from safetensors.torch import load_file, save_file

    files = sorted(parts.glob(f"{name}_part*.safetensors"))
    if not files:
        raise ValueError(f"{parts}: no parts of {name!r}")
    carried: dict = {}
    for path in files:
        carried.update(load_file(str(path)))
    trained = _joined(carried)
    with tarfile.open(parts / "meta.tar.gz") as tar:
        meta = {Path(m.name).name: tar.extractfile(m).read() for m in tar.getmembers()
                if m.isfile() and Path(m.name).parent.name == name}
    if MANIFEST not in meta:
        raise ValueError(f"{parts}: meta.tar.gz lists no tensors of {name!r}")
    before = load_file(str(base / "model.safetensors"))
    weights = {}
    for key, shape in json.loads(meta[MANIFEST]).items():
        value = trained.get(key, before.get(key))
        if value is None or list(value.shape) != shape:
            raise ValueError(f"{parts}: {key} of {name!r} is neither carried nor in {base} (shape {shape})")
        weights[key] = value
    dest.mkdir(parents=True, exist_ok=True)
    for f in META_FILES:
        if f in meta:
            (dest / f).write_bytes(meta[f])
        elif f in TOKENIZER_FILES:
            shutil.copy(base / f, dest / f)
    save_file({k: v.half().contiguous() for k, v in weights.items()}, str(dest / "model.safetensors"),
              metadata={"format": "pt"})
    return dest


def half(folder: Path, dest: Path) -> Path:
    """``folder`` copied to ``dest`` with its ``model.safetensors`` in fp16 (half the bytes, for the trip there)."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("model.safetensors", "*.bin", "onnx", "openvino",
                                                                 "README.md"), dirs_exist_ok=True)
    save_file({k: v.half().contiguous() for k, v in load_file(str(folder / "model.safetensors")).items()},
              str(dest / "model.safetensors"), metadata={"format": "pt"})
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
    h = sub.add_parser("half")
    h.add_argument("folder", type=Path)
    h.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "pack":
        for path in pack(args.out, args.base, args.folders):
            print(path.name, path.stat().st_size)
    elif args.verb == "half":
        print(f"wrote {half(args.folder, args.dest)}")
    else:
        print(f"rebuilt {unpack(args.parts, args.name, args.base, args.dest)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
