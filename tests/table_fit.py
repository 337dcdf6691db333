"""Whether a table the dashboard sends shows its text uncut (issue 43 item 4), read from what Streamlit receives:
each column's pixel width and the row height. Streamlit wraps a text cell only in rows taller than 4rem; a
character is taken as 8 px of the table's 14 px font plus 28 px of padding (Chromium screenshots agree)."""

from __future__ import annotations

import json

CHAR_PX, PAD_PX, LINE_PX, WRAP_ABOVE_PX = 8, 28, 21, 64


def cut_cells(table, columns=None) -> list[str]:
    """Every header or text cell of an AppTest dataframe that its column cannot show whole (``columns``: only these)."""
    config = json.loads(table.proto.columns or "{}")
    row = table.proto.row_height or 35
    lines = max(1, (row - 12) // LINE_PX) if row > WRAP_ABOVE_PX else 1
    frame = table.value
    problems = []
    for name in columns or list(frame.columns):
        c = config.get(name, {})
        width, label = c.get("width"), c.get("label") or name
        if not isinstance(width, int):
            problems.append(f"{name}: no pixel width ({width!r})")
            continue
        if len(label) * CHAR_PX + PAD_PX > width:
            problems.append(f"{name}: header {label!r} cut at {width} px")
        if c.get("type_config", {}).get("type", "text") != "text":
            continue
        per_line = (width - PAD_PX) // CHAR_PX
        for value in frame[name].tolist():
            if value is not None and len(str(value)) > per_line * lines:
                problems.append(f"{name}: {str(value)[:40]!r}... cut ({len(str(value))} chars, {lines} line(s) of "
                                f"{per_line})")
    return problems
