"""The F1 heatmap drawn one quad per cell (issue 15: imshow resampled the release grid in floats, 6.7 s
and 470 MB): a missing pair still shows grey, and the same inputs give the same bytes."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("matplotlib")

from kit.results.kinds.lrb.report import heatmap_png  # noqa: E402


def test_missing_pairs_are_grey_and_the_bytes_are_stable():
    from matplotlib import image

    runs, langs = ["org/a", "org/b"], ["de", "fr", "ja"]
    f1 = {(r, lang): 0.9 for r in runs for lang in langs if (r, lang) != ("org/b", "ja")}
    data = heatmap_png(runs, langs, f1)
    assert data == heatmap_png(runs, langs, f1)
    pixels = image.imread(io.BytesIO(data))[..., :3]
    grey = (abs(pixels - 211 / 255) < 0.01).all(axis=-1)
    assert grey.sum() > 100          # the missing cell's area
    full = heatmap_png(runs, langs, {(r, lang): 0.9 for r in runs for lang in langs})
    full_pixels = image.imread(io.BytesIO(full))[..., :3]
    assert (abs(full_pixels - 211 / 255) < 0.01).all(axis=-1).sum() < grey.sum() / 10
