"""The memory server's token (issue 71 item 7): made once per store folder, its owner's alone, read by clients."""

from __future__ import annotations

import os
import stat

import pytest

from cns_core.memory.server_token import TOKEN_NAME, TokenError, auth_header, ensure_token, read_token, token_path


def test_a_token_is_made_once_mode_600_and_kept_for_the_next_server(tmp_path):
    folder = tmp_path / "chroma"
    assert read_token(folder) is None                 # nothing served yet: a client sends none
    made = ensure_token(folder)
    assert token_path(folder) == folder / TOKEN_NAME
    assert stat.S_IMODE(token_path(folder).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert len(made) >= 40 and read_token(folder) == made
    assert ensure_token(folder) == made               # a restarted server takes the same token
    assert sorted(p.name for p in folder.iterdir()) == [TOKEN_NAME]      # no draft left behind


def test_a_token_left_readable_by_others_is_made_private_again(tmp_path):
    made = ensure_token(tmp_path)
    token_path(tmp_path).chmod(0o644)
    assert ensure_token(tmp_path) == made
    assert stat.S_IMODE(token_path(tmp_path).stat().st_mode) == 0o600


@pytest.mark.parametrize("content", [b"", b"\n", b"not a token!\n", b"x" * 300, b"\xff\xfe\x00"])
def test_a_damaged_token_is_refused_by_a_client_and_replaced_by_the_server(tmp_path, content):
    token_path(tmp_path).write_bytes(content)
    with pytest.raises(TokenError, match=f"token {token_path(tmp_path)} is damaged"):
        read_token(tmp_path)
    made = ensure_token(tmp_path)
    assert read_token(tmp_path) == made and made.encode() != content.strip()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: the unreadable case needs another user")
def test_an_unreadable_token_says_whose_memory_it_is(tmp_path):
    ensure_token(tmp_path)
    token_path(tmp_path).chmod(0)
    with pytest.raises(TokenError, match="only the owner of the state folder"):
        read_token(tmp_path)


def test_the_token_travels_as_a_bearer_token_and_no_token_sends_no_header():
    assert auth_header("abc") == {"Authorization": "Bearer abc"}
    assert auth_header(None) == {}
