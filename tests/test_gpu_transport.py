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


def test_parts_that_do_not_fit_the_base_model_are_refused(tmp_path):
    transport = _transport()
    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    out = tmp_path / "out"
    out.mkdir()
    transport.pack(out, base, [build_tiny_nli_model(tmp_path / "other-x", seed=4, size="xsmall")])
    with pytest.raises(ValueError, match="of 'x'"):
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
