"""``cns project [PART]``: where this installation reads its configuration, models and examples, and where it writes.

Without PART it prints each part's folder and why it is that one (a project folder named with
``CNS_PROJECT_DIR`` or ``cns --project``, the checkout the package runs from, or the copy an installed wheel
carries); with PART it prints that one path alone, for scripts: ``cns evaluate "$(cns project examples)"``;
with ``--json`` every part's path and where the project and state folder come from.
"""

from __future__ import annotations

import argparse
import json
import sys

from cns_core.config import Project, config_dir, resolve_project

__all__ = ["PARTS", "part_paths", "register", "run"]

# The parts a person may ask for, in the order they are listed.
PARTS = ("root", "config", "models", "examples", "dashboard", "state")


def part_paths(project: Project) -> dict[str, str]:
    """Each part's path as this process uses it (the named project's where it has the part, else the package's)."""
    return {"root": str(project.root), "config": str(config_dir()), "models": str(project.path("models")),
            "examples": str(project.path("examples")), "dashboard": str(project.path("dashboard.py")),
            "state": str(project.state)}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("project", help="where the configuration, models, examples and state folder are",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("part", nargs="?", choices=PARTS, help="print this part's path alone")
    parser.add_argument("--json", action="store_true", help="every part's path and the origins, as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    project = resolve_project()
    paths = part_paths(project)
    if args.part:
        print(paths[args.part])
        return 0
    if args.json:
        print(json.dumps({**paths, "root_origin": project.root_origin, "home": str(project.home),
                          "state_origin": project.state_origin}, indent=2))
        return 0
    print(f"project folder: {paths['root']} ({project.root_origin})")
    if project.named is not None:
        print(f"  files it lacks come from {project.home} ({project.home_origin})")
    for part in PARTS[1:-1]:
        print(f"{part + ':':15} {paths[part]}")
    print(f"state folder:   {paths['state']} ({project.state_origin})")
    sys.stdout.flush()
    return 0
