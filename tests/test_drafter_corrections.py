"""A person's corrections of drafts: kept in the state folder, read as gold graphs, refit into the state folder
(never over the shipped model), the active drafter switched and reverted."""

from __future__ import annotations

import json

import pytest

from critic_doubles import TableEmbedder, TableNLI
from cns_core.config import PROJECT_ROOT
from cns_core.sno import SNO
from cns_core.text import draft_sno
from cns_core.text.corrections import (CorrectionError, activate_refit, active_refit, corrections_dir, read_corrections,
                                       record_correction, refit_dir, revert_to_shipped)
from cns_core.text.miner import default_miner_path, load_default_miner
from cns_core.training.drafter import MinerTrainSettings, refit_on_corrections
from cns_core.views import text_draft
from test_argument_miner import SETTINGS, TEXTS

TEXT = "We should ban cars downtown. Cars pollute the air. Admittedly, shops may lose customers."
SHIPPED = PROJECT_ROOT / "models" / "argument-miner"


def _sno(hypothesis: str, relations: list[tuple[str, str, str]]) -> SNO:
    return SNO.model_validate({
        "id": "d", "hypothesis": hypothesis,
        "claims": [{"id": "c1", "text": "We should ban cars downtown."}, {"id": "c2", "text": "Cars pollute the air."},
                   {"id": "c3", "text": "Shops may lose customers."}],
        "relations": [{"id": f"r{k}", "source": s, "target": t, "kind": kind}
                      for k, (s, t, kind) in enumerate(relations)]})


DRAFTED = _sno("c2", [("c1", "c2", "support"), ("c3", "c2", "support")])
CORRECTED = _sno("c1", [("c2", "c1", "support"), ("c3", "c1", "attack")])


def test_a_correction_is_kept_only_when_something_changed_and_reads_as_gold(state_dir):
    assert record_correction(TEXT, DRAFTED, DRAFTED) is None
    path = record_correction(TEXT, DRAFTED, CORRECTED)
    assert path.parent == corrections_dir() and path.parent.is_relative_to(state_dir)
    assert record_correction(TEXT, DRAFTED, CORRECTED) == path              # the same text replaces its file
    [gold] = read_corrections(corrections_dir())
    assert gold.text == TEXT and gold.main == {0}
    assert gold.relations == [(1, 0, "support"), (2, 0, "attack")]


def test_a_bad_correction_file_is_named(state_dir):
    folder = corrections_dir()
    folder.mkdir(parents=True)
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CorrectionError, match="broken.json: not a readable JSON"):
        read_corrections(folder)
    (folder / "broken.json").write_text(json.dumps({"format": 1, "text": "x", "corrected": {"id": "d"}}))
    with pytest.raises(CorrectionError, match="broken.json: corrected: not a valid SNO"):
        read_corrections(folder)


def test_a_refit_goes_to_the_state_folder_becomes_active_and_reverts(state_dir):
    embedder = TableEmbedder(dim=16)
    record_correction(TEXT, DRAFTED, CORRECTED)
    with pytest.raises(ValueError, match="is the shipped model"):
        refit_on_corrections(SETTINGS, TEXTS, corrections_dir(), embedder, SHIPPED, SHIPPED)
    shipped_before = (SHIPPED / "miner.npz").stat().st_mtime
    miner = refit_on_corrections(SETTINGS, TEXTS, corrections_dir(), embedder, refit_dir(), SHIPPED)
    assert miner.info["corrections"] == 1 and miner.info["texts"]["corrections"] == 1
    assert (SHIPPED / "miner.npz").stat().st_mtime == shipped_before
    assert active_refit() is None and default_miner_path() == SHIPPED        # written, not yet active
    activate_refit()
    assert default_miner_path() == refit_dir() and load_default_miner().identity == miner.identity
    draft = draft_sno(TEXT, embedder=embedder, nli=TableNLI())
    assert draft.sno.metadata["drafter"] == miner.identity
    assert text_draft.drafter_status().active == "refit on your corrections"
    assert revert_to_shipped() and default_miner_path() == SHIPPED
    assert text_draft.drafter_status().active == "shipped" and not revert_to_shipped()


def test_the_author_page_keeps_corrections_and_refits_with_the_command(state_dir):
    tables = text_draft.tables_of(type("D", (), {"sno": DRAFTED, "notes": []})(), TEXT)
    assert text_draft.keep_correction(tables, DRAFTED).startswith("Nothing to keep")
    assert text_draft.keep_correction(tables, CORRECTED).startswith("Kept (1 corrected text")
    command = text_draft.refit_command()
    assert command[-3:] == ["train-drafter", "--corrections", str(corrections_dir())]
    assert MinerTrainSettings().output == "models/argument-miner"            # the shipped path is only the default
