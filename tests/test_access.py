"""cns_core.access: loopback addresses, the dashboard token, paths confined to the allowed roots; and the bus
and the Chroma client refusing a non-loopback host unless it is configured on purpose."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from cns_core import access
from cns_core.config import PROJECT_ROOT, ConfigError


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("", False), ("10.1.2.3", False),
    ("example.org", False), ("::ffff:10.0.0.1", False)])
def test_is_loopback(host, loopback):
    assert access.is_loopback(host) is loopback


# ----- the token ---------------------------------------------------------------------
def test_no_token_until_one_is_set_then_the_variable_wins_over_the_file(state_dir, monkeypatch):
    monkeypatch.delenv(access.TOKEN_ENV, raising=False)
    assert access.dashboard_token() is None
    written = access.new_token()
    assert len(written) >= 40 and access.dashboard_token() == written
    path = access.token_file()
    assert path.parent == state_dir and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert access.new_token() != written            # a new token replaces the old one
    monkeypatch.setenv(access.TOKEN_ENV, "  from-the-environment-0123  ")
    assert access.dashboard_token() == "from-the-environment-0123"


def test_a_short_token_is_refused_with_its_source(state_dir, monkeypatch):
    monkeypatch.setenv(access.TOKEN_ENV, "secret")
    with pytest.raises(access.AccessError, match=r"CNS_DASHBOARD_TOKEN: 6 characters is too short .*at least 16"):
        access.dashboard_token()
    monkeypatch.delenv(access.TOKEN_ENV)
    access.token_file().write_text("short\n")
    with pytest.raises(access.AccessError, match=r"dashboard_token: 5 characters"):
        access.dashboard_token()


def test_token_matches_only_the_same_token():
    assert access.token_matches("abcdefghijklmnopq", "abcdefghijklmnopq")
    assert access.token_matches(" abcdefghijklmnopq\n", "abcdefghijklmnopq")      # pasted with whitespace
    assert not access.token_matches("abcdefghijklmnopr", "abcdefghijklmnopq")
    assert not access.token_matches("", "abcdefghijklmnopq")
    assert not access.token_matches("abcdefghijklmnopqX", "abcdefghijklmnopq")
    assert access.token_id("a" * 20) != access.token_id("b" * 20) and "a" * 20 not in access.token_id("a" * 20)


# ----- paths ---------------------------------------------------------------------------
def test_confine_keeps_paths_under_a_root_and_names_the_roots_otherwise(tmp_path, state_dir):
    inside = state_dir / "corpus" / "run.parquet"
    inside.parent.mkdir()
    inside.write_text("x")
    assert access.confine(str(inside), "Results file") == inside.resolve()
    assert access.confine("examples", "Folder") == (PROJECT_ROOT / "examples").resolve()     # relative: project root
    assert access.confine(f"{state_dir}/corpus/../corpus/run.parquet", "Results file") == inside.resolve()

    outside = tmp_path / "elsewhere.parquet"
    outside.write_text("x")
    link = state_dir / "link.parquet"
    link.symlink_to(outside)
    roots = access.describe_roots(access.allowed_roots())
    for attempt, shown in [(f"{state_dir}/../elsewhere.parquet", f"{state_dir}/../elsewhere.parquet (= {outside})"),
                           (str(outside), str(outside)), ("/etc/passwd", "/etc/passwd"),
                           (str(link), f"{link} (= {outside})"), ("examples/../../", None)]:
        with pytest.raises(access.AccessError) as err:
            access.confine(attempt, "Results file")
        message = str(err.value)
        assert message.startswith(f"Results file {shown or attempt}"), message
        assert f"outside the folders the dashboard may read: {roots}." in message
    with pytest.raises(access.AccessError, match="Results file: is empty"):
        access.confine("  ", "Results file")


def test_data_roots_come_from_access_yaml(tmp_path, state_dir, monkeypatch):
    config = tmp_path / "config"
    shutil.copytree(PROJECT_ROOT / "config", config)
    extra = tmp_path / "corpora"
    extra.mkdir()
    (config / "access.yaml").write_text(f"paths:\n  data_roots: [{extra}]\n")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(config))
    monkeypatch.setenv("CNS_DATA_DIR", str(tmp_path / "shared"))
    roots = access.allowed_roots()
    assert [(r.name, r.path) for r in roots] == [
        ("state folder", state_dir.resolve()), ("examples", (PROJECT_ROOT / "examples").resolve()),
        ("shared data", (tmp_path / "shared").resolve()), ("data root", extra.resolve())]
    assert access.confine(str(extra / "a.csv"), "Results file") == extra / "a.csv"
    (config / "access.yaml").write_text("paths:\n  data_roots: /one/folder\n")
    with pytest.raises(ConfigError, match="access.yaml: paths.data_roots: expected a list"):
        access.allowed_roots()


# ----- the bus and the Chroma client ---------------------------------------------------
def test_the_bus_refuses_another_host_unless_allowed_on_purpose(monkeypatch):
    from cns_core.agents.bus import bus_settings
    from cns_core.agents.wire import BusConfig

    monkeypatch.setenv("CNS_BUS_HOST", "0.0.0.0")
    with pytest.raises(ConfigError) as err:
        bus_settings()
    assert str(err.value).startswith("bus.yaml: bus host '0.0.0.0': the bus listens on loopback only")
    assert "no authentication" in str(err.value) and "allow_non_loopback: true in config/bus.yaml" in str(err.value)
    assert BusConfig(host="::1").host == "::1"
    assert BusConfig(host="10.1.2.3", allow_non_loopback=True).pub_address == "tcp://10.1.2.3:5581"
    assert bus_settings(allow_non_loopback=True).host == "0.0.0.0"


def test_the_chroma_client_refuses_a_remote_server_unless_allowed_on_purpose(state_dir, monkeypatch):
    from cns_core.memory import MemoryService, memory_settings

    monkeypatch.setenv("CNS_CHROMA_URL", "http://10.1.2.3:8000")
    with pytest.raises(ConfigError) as err:
        MemoryService()
    message = str(err.value)
    assert message.startswith("memory url 'http://10.1.2.3:8000': the Chroma server must be on loopback")
    assert "allow_non_loopback: true in config/memory.yaml" in message
    assert memory_settings()["allow_non_loopback"] is False
    assert not (state_dir / "chroma").exists()      # refused before anything was opened
