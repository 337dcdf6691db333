"""Files a person names for a command to write (``cns export -o FILE``): checked first, written whole.

A reading command must not change what it was not asked to change: a missing folder is an error
(a typo must not create ``/nonexistent-root-dir``), and an existing read-only file or a symbolic link
is replaced only with ``--force`` (the link itself, never its target). The file is written beside its
place and moved there when complete, so a failure leaves what was there. Every OS error is said in
words naming the path as given, never ``[Errno 13] ... '.x.csv.tmp'``.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["output_problem", "os_error_words", "write_output"]

_WORDS = {errno.EACCES: "permission denied", errno.EPERM: "not permitted", errno.EROFS: "the file system is read-only",
          errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
          errno.ENAMETOOLONG: "the name is too long", errno.EISDIR: "is a folder; give a file name",
          errno.ENOTDIR: "a part of the path is a file, not a folder", errno.EEXIST: "a part of the path is a file, "
          "not a folder", errno.ENOENT: "its folder does not exist (create it first)"}


def os_error_words(exc: OSError, given: str | Path) -> str:
    """``-o GIVEN: permission denied`` for an OSError met while writing ``given``."""
    words = _WORDS.get(exc.errno or -1) or (exc.strerror or type(exc).__name__).lower()
    return f"-o {given}: {words}"


def output_problem(path: Path, force: bool = False) -> str | None:
    """Why ``path`` cannot be written (a missing folder, a folder, a pipe; a read-only file or a symbolic
    link without ``force``), or None."""
    parent = path.parent
    if not parent.exists():
        return f"the folder {parent} does not exist (create it first; it is not created for you)"
    if not parent.is_dir():
        return f"{parent} is a file, not a folder"
    if path.is_symlink():
        return None if force else (f"is a symbolic link (to {os.readlink(path)}); give --force to replace the "
                                   "link with a file")
    if not path.exists():
        return None if os.access(parent, os.W_OK) else f"permission denied (cannot write in {parent})"
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        return "is a folder; give a file name"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a pipe or a device); give a file name"
    read_only = not os.access(path, os.W_OK) or not mode & stat.S_IWUSR     # root may write it; a person said not to
    if read_only and not force:
        return "the file is read-only; give --force to replace it"
    if not os.access(parent, os.W_OK):
        return f"permission denied (cannot write in {parent})"
    return None


@contextmanager
def write_output(path: str | Path, force: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; it replaces ``path`` when the block ends without error
    (else it is removed). ValueError, in words, when ``path`` cannot or may not be written."""
    given = path
    path = Path(path)
    problem = output_problem(path, force)
    if problem:
        raise ValueError(f"-o {given}: {problem}")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise ValueError(os_error_words(exc, given)) from None
    finally:
        if tmp.exists():
            try:
                tmp.unlink()
            except OSError:
                pass
