"""kit.images.wheelhouse: the wheelhouse's hash memo is kit's own file, so a damaged one costs a rehash and
never a traceback; a requirements lock that is not text is bad input naming it."""

from __future__ import annotations

import hashlib

import pytest

from kit.errors import ConfigError
from kit.images.wheelhouse import file_hashes, lock_hashes


@pytest.mark.parametrize("memo", ["[]", '{"a.whl": 5}', '{"a.whl": ["1:2"]}', '{"a.whl": [1, 2]}', "not json", "null"])
def test_a_damaged_hash_memo_is_rebuilt_and_the_hashes_are_the_files(tmp_path, memo):
    (tmp_path / "a.whl").write_bytes(b"wheel bytes")
    (tmp_path / ".kit-sha256.json").write_text(memo, encoding="utf-8")
    assert file_hashes(tmp_path) == {"a.whl": hashlib.sha256(b"wheel bytes").hexdigest()}
    assert file_hashes(tmp_path) == {"a.whl": hashlib.sha256(b"wheel bytes").hexdigest()}   # from the new memo


def test_a_requirements_lock_that_is_not_utf8_is_bad_input_naming_it(tmp_path):
    lock = tmp_path / "requirements-cpu.lock"
    lock.write_bytes(b"anyio==4.16.0 \\\n    --hash=sha256:\xff\xfe\n")
    with pytest.raises(ConfigError, match="requirements-cpu.lock: not a requirements lock"):
        lock_hashes(lock)
    lock.write_bytes(b"anyio==4.16.0 \\\n    --hash=sha256:" + b"a" * 64 + b"\n")
    assert lock_hashes(lock) == {"anyio==4.16.0": {"a" * 64}}
