"""A pair's claim file (kit.worker.claims): never followed when it is a link, and then a clear error."""

from __future__ import annotations


def test_a_link_at_a_pair_s_claim_name_is_a_clear_error_and_its_target_untouched(tmp_path):
    import os

    import pytest

    from kit.errors import CheckpointError
    from kit.worker.claims import claim, claim_path

    checkpoint = tmp_path / "en" / "org__m.json"
    checkpoint.parent.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep", encoding="utf-8")
    os.symlink(victim, claim_path(checkpoint))
    with pytest.raises(CheckpointError) as err:
        with claim(checkpoint, None):
            pass
    assert "claim file cannot be opened" in err.value.message and "never a link" in err.value.fix
    assert victim.read_text(encoding="utf-8") == "keep"
