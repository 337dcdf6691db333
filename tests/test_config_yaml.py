"""A YAML syntax error in a config file names the line of its cause (issue 31, item 9)."""

from __future__ import annotations

import pytest

from cns_core.config import ConfigError, load_config


def test_an_unclosed_quote_is_reported_at_its_own_line_not_at_the_end(tmp_path, monkeypatch):
    (tmp_path / "bus.yaml").write_text('host: 127.0.0.1\npub_port: 5581\nsub_port: "5582\njournal_port: 5583\n'
                                       "hwm: 100000\nsend_timeout_s: 5.0\nready_timeout_s: 5.0\n", encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_config("bus")
    assert str(caught.value) == ("bus.yaml: not valid YAML: a quoted scalar that starts at line 3 column 11 is never "
                                 "closed (the file ends first)")


def test_an_error_inside_a_construct_names_both_places(tmp_path, monkeypatch):
    (tmp_path / "bus.yaml").write_text("host: 127.0.0.1\nports: [5581, 5582\npub_port: 5581\n", encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_config("bus")
    assert str(caught.value) == ("bus.yaml: not valid YAML: expected ',' or ']', but got ':' at line 3 column 9, in a "
                                 "flow sequence that starts at line 2 column 8")


def test_an_error_without_a_construct_names_its_line(tmp_path, monkeypatch):
    (tmp_path / "bus.yaml").write_text("host: 127.0.0.1\n  pub_port: 5581\n", encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"^bus.yaml: not valid YAML: mapping values are not allowed here at line 2 "
                                          r"column 11$"):
        load_config("bus")


def test_a_key_written_twice_in_a_config_file_is_refused_with_both_lines(tmp_path, monkeypatch):
    """Issue 53, item 6: the second of two equal keys silently won."""
    (tmp_path / "bus.yaml").write_text("host: 127.0.0.1\npub_port: 5581\nsub_port: 5582\npub_port: 6000\n",
                                       encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_config("bus")
    assert str(caught.value) == ("bus.yaml: not valid YAML: the key 'pub_port' is written twice (first at line 2); "
                                 "keep one at line 4 column 1")
