"""MkDocs hooks (mkdocs.yml ``hooks:``): the reference pages are generated from the code at build time.

* ``<!-- cli-reference -->`` in a page becomes the help of ``cns`` and of every subcommand, read from
  ``cns_core.cli.build_parser()`` (the parser ``cns`` itself runs), so the page cannot drift;
* ``<!-- config-reference -->`` becomes one section per ``config/*.yaml`` file: its header comment, then
  every key (dotted path), its shipped value and the comment written beside or above it;
* ``<!-- demo:KEY -->`` becomes the demo's figure KEY from ``docs/figures/demo.json`` (written from the demo
  data by ``scripts/docs_screens.py``, see ``cns_core.cli.demo_figures``), so a page never types a demo count.

Nothing in ``cns_core`` imports MkDocs; this file only imports ``cns_core``. The functions are plain, so
tests/test_docs.py can call them too.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
CLI_MARK = "<!-- cli-reference -->"
CONFIG_MARK = "<!-- config-reference -->"
DEMO_FIGURES = ROOT / "docs" / "figures" / "demo.json"
DEMO_MARK = re.compile(r"<!--\s*demo:([a-z_]+)\s*-->")
_KEY = re.compile(r"""^(\s*)([A-Za-z0-9_.\-]+|"[^"]*"|'[^']*'):(?:\s+|$)(.*)$""")


# --- the CLI -------------------------------------------------------------------------------------------

def subcommands() -> dict[str, argparse.ArgumentParser]:
    """``cns``'s subcommands in the order ``cns --help`` lists them, with their parsers."""
    parser = _parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _parser() -> argparse.ArgumentParser:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ["COLUMNS"] = "100"          # the same wrapping on every machine
    from cns_core.cli import build_parser

    return build_parser()


def cli_markdown() -> str:
    parser = _parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in action._choices_actions}
    out = ["| command | what it does |", "| --- | --- |"]
    out += [f"| [`cns {name}`](#cns-{name}) | {_cell(helps.get(name) or '')} |" for name in action.choices]
    out += ["", "## cns", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in action.choices.items():
        out += [f"## cns {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(out)


# --- the configuration ---------------------------------------------------------------------------------

def yaml_keys(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every mapping key of a loaded YAML document as (dotted path, value), parents before children."""
    keys: list[tuple[str, Any]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            keys.append((path, value))
            keys.extend(yaml_keys(value, path))
    return keys


def yaml_comments(text: str) -> tuple[str, dict[str, str]]:
    """(the file's header comment, dotted key -> the comment above it, beside it and continuing below it)."""
    lines = text.splitlines()
    header: list[str] = []
    i = 0
    while i < len(lines) and lines[i].lstrip().startswith("#"):
        header.append(lines[i].lstrip()[1:].strip())
        i += 1
    comments: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    last: tuple[int, str] | None = None        # (column of its comment, key): a comment-only line aligned with a
                                                # key's beside comment continues it
    in_list: int | None = None                  # indent of a list whose items' keys are not config keys
    in_block: int | None = None                 # indent of a key whose value is a block scalar (| or >)
    for line in lines[i:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if in_block is not None:
            if not stripped or indent > in_block:
                continue
            in_block = None
        if not stripped:
            pending, last = [], None
            continue
        if stripped.startswith("#"):
            note = stripped[1:].strip()
            if last is not None and indent > last[0]:
                comments.setdefault(last[1], []).append(note)
            else:
                pending.append(note)
                last = None
            continue
        if in_list is not None and (indent > in_list or (indent == in_list and stripped.startswith("-"))):
            pending = []
            continue
        in_list = None
        if stripped.startswith("-"):
            in_list, pending = indent, []
            continue
        match = _KEY.match(line)
        if not match:
            pending = []
            continue
        key = match.group(2).strip("\"'")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        beside = re.search(r"(?:^|\s)#\s?(.*)$", match.group(3))
        notes = pending + ([beside.group(1).strip()] if beside else [])
        comments[path] = notes
        pending = []
        last = (len(line) - len(match.group(3)) + beside.start(0) - 2, path) if beside else None
        if re.match(r"[|>][-+0-9]*(\s|$)", match.group(3)):
            in_block = indent
    return " ".join(header), {k: " ".join(v).strip() for k, v in comments.items()}


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ""
    if isinstance(value, list) and len(value) > 4:
        return f"a list of {len(value)}"
    if isinstance(value, str) and (len(value) > 60 or "\n" in value):
        shown = " ".join(value.split())            # a long text (a prompt): its start, on one line
    else:
        shown = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        shown = " ".join(shown.removesuffix("\n...").removesuffix("...").split())
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"`{shown}`".replace("|", "\\|") if shown else ""


def config_markdown(config_dir: Path = CONFIG) -> str:
    out: list[str] = []
    for path in sorted(config_dir.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        header, comments = yaml_comments(text)
        out += [f"## config/{path.name}", ""]
        if header:
            out += [_cell(header), ""]
        out += ["| key | shipped value | what it means |", "| --- | --- | --- |"]
        for key, value in yaml_keys(yaml.safe_load(text) or {}):
            out.append(f"| `{key}` | {_value(value)} | {_cell(comments.get(key, ''))} |")
        out.append("")
    return "\n".join(out)


# --- the hook ------------------------------------------------------------------------------------------

def demo_figures() -> dict[str, Any]:
    import json

    return json.loads(DEMO_FIGURES.read_text(encoding="utf-8"))


def fill_demo_figures(markdown: str, where: str = "page") -> str:
    """Every ``<!-- demo:KEY -->`` replaced by the demo's figure; an unknown or empty one stops the build."""
    if not DEMO_MARK.search(markdown):
        return markdown
    figures = demo_figures()

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if figures.get(key) is None:
            raise ValueError(f"{where}: <!-- demo:{key} -->: no figure {key!r} in {DEMO_FIGURES.relative_to(ROOT)}")
        return str(figures[key])

    return DEMO_MARK.sub(value, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = fill_demo_figures(markdown, getattr(getattr(page, "file", None), "src_path", "page"))
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_markdown())
    if CONFIG_MARK in markdown:
        markdown = markdown.replace(CONFIG_MARK, config_markdown())
    return markdown
