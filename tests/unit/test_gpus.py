"""Which GPUs an image's CUDA code runs on: the two arch-list grammars, NVIDIA's compatibility rule
(SASS upwards within a major version, PTX onto anything newer), GPU model names as nvidia-smi and
Grid'5000 print them, and the OAR expression in Grid'5000's own properties."""

from __future__ import annotations

import pytest

from kit.gpus import (model_capability, oar_capability_term, parse_arch_flags, parse_capability, parse_cmake_archs,
                      parse_torch_archs)

V100, T4, A100, A40, L40S, H100, B200, PRO6000, P100 = (7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), \
    (12, 0), (6, 0)


def test_a_plain_cmake_list_carries_sass_and_ptx_so_newer_gpus_jit_the_newest():
    gguf = parse_cmake_archs("70;75;80;86;89;90")
    assert all(gguf.runs_on(cc) for cc in (V100, T4, A100, A40, L40S, H100, B200, PRO6000))
    assert not gguf.runs_on(P100) and not gguf.runs_on((6, 1))
    assert gguf.known()[1] == V100 and gguf.describe() == "compute capability 7.0 and newer"


def test_real_only_code_runs_within_its_major_and_not_past_it():
    real = parse_cmake_archs("80-real;90-real")
    assert real.runs_on(A100) and real.runs_on(A40) and real.runs_on(L40S) and real.runs_on(H100)
    assert not real.runs_on(B200) and not real.runs_on(T4)
    assert real.describe() == "compute capability 8.0, 8.6, 8.9, 9.0"


def test_an_arch_specific_build_runs_on_that_capability_only():
    hopper = parse_cmake_archs("90a")
    assert hopper.runs_on(H100) and not hopper.runs_on(B200) and not hopper.runs_on(L40S)


def test_a_hopper_only_build_with_ptx_refuses_ampere():
    proof = parse_cmake_archs("90")
    assert proof.runs_on(H100) and proof.runs_on(B200) and not proof.runs_on(A100)


def test_torch_lists_need_plus_ptx_for_newer_gpus():
    cu13 = parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0+PTX")
    assert cu13.runs_on(T4) and cu13.runs_on(L40S) and cu13.runs_on((12, 1)) and not cu13.runs_on(V100)
    no_ptx = parse_torch_archs("8.0;9.0")
    assert not no_ptx.runs_on(B200) and no_ptx.runs_on(A40)


def test_torch_arch_flags_read_as_compiled():
    flags = parse_arch_flags("sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120")
    listed = parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0+PTX")
    assert (flags.sass, flags.ptx, flags.exact) == (listed.sass, listed.ptx, listed.exact)
    assert flags.known()[1] == T4 and not flags.runs_on(V100) and flags.runs_on((12, 1))


@pytest.mark.parametrize("bad", ["native", "all", "", "sm_90", "7.5"])
def test_cmake_lists_that_name_no_architecture_are_refused(bad):
    with pytest.raises(ValueError):
        parse_cmake_archs(bad)


@pytest.mark.parametrize("bad", ["75", "7.5.1", "PTX", ""])
def test_torch_lists_that_name_no_architecture_are_refused(bad):
    with pytest.raises(ValueError):
        parse_torch_archs(bad)


@pytest.mark.parametrize("name, cc", [
    ("Tesla V100-PCIE-32GB", V100), ("Tesla V100-SXM2-32GB", V100), ("A100-SXM4-40GB", A100),
    ("NVIDIA A100-SXM4-80GB", A100), ("A40", A40), ("NVIDIA L40S", L40S), ("L40", L40S), ("NVIDIA L4", L40S),
    ("H100 NVL", H100), ("NVIDIA H200", H100), ("NVIDIA GH200 480GB", H100), ("Tesla T4", T4),
    ("Quadro RTX 6000", T4), ("Quadro RTX 8000", T4), ("NVIDIA RTX 6000 Ada Generation", L40S),
    ("NVIDIA RTX A6000", A40), ("RTX A5000", A40), ("NVIDIA GeForce RTX 4090", L40S),
    ("NVIDIA GeForce RTX 3090", A40), ("GeForce RTX 2080 Ti", T4), ("GeForce GTX 1080 Ti", (6, 1)),
    ("Tesla P100-PCIE-16GB", P100), ("NVIDIA B200", B200), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", PRO6000),
    ("NVIDIA GeForce RTX 5090", PRO6000), ("Tesla K80", (3, 7)), ("NVIDIA A10", A40), ("NVIDIA A30", A100),
])
def test_gpu_model_names_as_nvidia_smi_and_grid5000_print_them(name, cc):
    assert model_capability(name) == cc


@pytest.mark.parametrize("name", ["AMD Instinct MI250X", "fake", "Radeon", "A4000X"])
def test_a_model_kit_does_not_know_has_no_capability(name):
    assert model_capability(name) is None


def test_capabilities_parse_as_nvidia_smi_prints_them():
    assert parse_capability("8.6") == A40 and parse_capability(" 10.0 ") == B200
    for bad in ("86", "8", "eight", "8.6.1"):
        with pytest.raises(ValueError):
            parse_capability(bad)


def test_the_oar_term_orders_by_the_major_integer_not_the_string():
    assert oar_capability_term(parse_cmake_archs("70;75;80;86;89;90")) == "gpu_compute_capability_major>=7"
    term = oar_capability_term(parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0+PTX"))
    assert term == ("(gpu_compute_capability_major>7 OR (gpu_compute_capability_major=7 AND "
                    "gpu_compute_capability>='7.5'))")
    assert oar_capability_term(parse_cmake_archs("80-real;90-real")) == (
        "gpu_compute_capability IN ('8.0', '8.6', '8.9', '9.0')")


def test_the_oar_term_selects_what_runs_the_image_on_every_known_gpu():
    """The term evaluated as OAR's database would (the major an integer, the capability a string)."""
    from kit.gpus import KNOWN

    def select(term: str, cc: tuple[int, int]) -> bool:
        major, text = cc[0], f"{cc[0]}.{cc[1]}"
        expr = (term.replace("gpu_compute_capability_major", "MAJOR").replace("gpu_compute_capability", "CC")
                .replace(" OR ", " or ").replace(" AND ", " and ").replace(" IN ", " in ").replace("=", "==")
                .replace(">==", ">=").replace("<==", "<="))
        return eval(expr, {"MAJOR": major, "CC": text})     # noqa: S307 - our own expression, a test

    for archs in (parse_cmake_archs("70;75;80;86;89;90"), parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0+PTX"),
                  parse_cmake_archs("90"), parse_cmake_archs("80-real;90-real"), parse_torch_archs("8.0;8.6")):
        term = oar_capability_term(archs)
        assert [cc for cc in KNOWN if select(term, cc)] == [cc for cc in KNOWN if archs.runs_on(cc)], term


def test_the_lock_s_flags_read_back_as_the_same_code():
    for archs in (parse_cmake_archs("70;75;80;86;89;90"), parse_cmake_archs("90a;80-real"),
                  parse_torch_archs("7.5;8.0;8.6;9.0;10.0;12.0")):
        back = parse_arch_flags(archs.flags())
        assert (back.sass, back.ptx, back.exact) == (archs.sass, archs.ptx, archs.exact), archs.flags()
    assert parse_cmake_archs("80;90-real").flags() == "sm_80 sm_90 compute_80"
