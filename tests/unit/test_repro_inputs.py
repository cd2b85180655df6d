"""kit reproduce on a path that is not a checkpoint file: one error line and exit 2, never an unbounded
read. Run in a child process whose memory is capped, so a regression fails here instead of exhausting
the machine's memory."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

CAP_BYTES = 2 << 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def _kit(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, preexec_fn=_cap_memory)


def test_reproduce_of_a_link_to_dev_zero_is_bad_input(tmp_path):
    (tmp_path / "x.json").symlink_to("/dev/zero")
    r = _kit("reproduce", "x.json", cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "x.json: a checkpoint is not a regular file" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1



@pytest.mark.parametrize(("text", "said"), [("agreement=5", "agreement=5 is not a share from 0 to 1"),
                                            ("f1=-1", "f1=-1 is not a finite number of 0 or more"),
                                            ("f1=nan", "f1=nan is not a finite number"),
                                            ("agreement=0.9,f1=inf", "f1=inf is not a finite number")])
def test_a_tolerance_out_of_its_range_is_refused(text, said):
    from kit.errors import ConfigError
    from kit.repro.compare import parse_tolerance

    with pytest.raises(ConfigError, match=said):
        parse_tolerance(text)
    assert parse_tolerance("agreement=1,f1=0").agreement == 1.0
