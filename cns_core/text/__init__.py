"""Text in, SNO out: segmentation, discourse cues, source reading and SNO drafting.

The domain package behind ``cns extract``, ``cns evaluate --text`` and the Author page's
"From text". Its sentence splitter is the project's only one (the coherence hook and the
grounding critic use it too).
"""

from cns_core.text.draft import Draft, DraftSettings, check_text, draft_sno, draft_snos, drafter_identity
from cns_core.text.segment import Span, Unit, segment_units, sentence_spans, split_sentences
from cns_core.text.sources import (
    Passage,
    SourceText,
    TextInputError,
    TextLimits,
    read_source_bytes,
    read_source_files,
    read_text_bytes,
    read_text_file,
    source_passages,
)

__all__ = [
    "Draft", "DraftSettings", "check_text", "draft_sno", "draft_snos", "drafter_identity",
    "Span", "Unit", "segment_units", "sentence_spans", "split_sentences",
    "Passage", "SourceText", "TextInputError", "TextLimits", "read_source_bytes", "read_source_files",
    "read_text_bytes", "read_text_file", "source_passages",
]
