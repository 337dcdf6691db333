"""The suite's own budget (issue 45): `make test` starts the longest files first and prints the slowest tests.

What keeps `make test` within its budget (docs/development.md, "Test budget") is a schedule, not a
test body: these checks fail when a long file named for the schedule is renamed away, or when the
Makefile's pytest line loses the options the schedule and the summary need.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from conftest import LONGEST_FIRST, PROJECT_ROOT, pytest_collection_modifyitems


def test_every_file_named_longest_first_exists():
    missing = [name for name in LONGEST_FIRST if not (PROJECT_ROOT / "tests" / name).is_file()]
    assert missing == [] and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_longest_files_are_collected_first_and_the_rest_keep_their_order():
    names = ["test_access.py", LONGEST_FIRST[1], "test_bus.py", LONGEST_FIRST[0], "test_access.py",
             LONGEST_FIRST[1], "test_zeta.py"]
    items = [SimpleNamespace(path=Path("tests") / name, n=i) for i, name in enumerate(names)]
    pytest_collection_modifyitems(None, items)
    assert [(item.path.name, item.n) for item in items] == [
        (LONGEST_FIRST[0], 3), (LONGEST_FIRST[1], 1), (LONGEST_FIRST[1], 5), ("test_access.py", 0),
        ("test_bus.py", 2), ("test_access.py", 4), ("test_zeta.py", 6)]


def test_make_test_keeps_the_file_order_and_prints_the_slowest_tests():
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    (line,) = re.findall(r"^\t\$\(PY\) -m pytest .*$", makefile, flags=re.M)
    assert "-n 2" in line and "--dist loadfile" in line and "--no-loadscope-reorder" in line
    assert re.search(r"--durations=\d+", line), line


def test_make_test_prints_its_wall_time():
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "date +%s" in recipe and "s of wall time" in recipe and "exit $$status" in recipe


def _stress_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("stress_tests", PROJECT_ROOT / "scripts" / "stress_tests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stress_set_names_existing_files_and_make_test_stress_runs_it():
    stress = _stress_script()
    for pattern in stress.DEFAULT_TESTS:
        assert stress.expand([pattern]), f"{pattern} matches no test file"
    assert "tests/test_browser_demo35.py" in stress.expand(list(stress.DEFAULT_TESTS))
    assert stress.expand(["tests/test_bus.py::test_x", "-k", "slider"]) == ["tests/test_bus.py::test_x", "-k", "slider"]
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test-stress:.*\n\t\$\(PY\) scripts/stress_tests.py --count \$\(STRESS_COUNT\)", makefile, re.M)


def test_a_stress_round_names_the_tests_that_failed(tmp_path):
    stress = _stress_script()
    report = tmp_path / "round.xml"
    report.write_text('<testsuites><testsuite name="pytest">'
                      '<testcase classname="tests.test_a" name="test_ok"/>'
                      '<testcase classname="tests.test_a" name="test_bad"><failure message="x"/></testcase>'
                      '<testcase classname="tests.test_b" name="test_setup"><error message="y"/></testcase>'
                      '</testsuite></testsuites>')
    assert stress.failures(report) == ["tests.test_a::test_bad", "tests.test_b::test_setup"]
    assert stress.failures(tmp_path / "missing.xml") == ["(no report: pytest did not finish)"]
