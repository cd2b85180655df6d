"""Run kit inside a SIF (Apptainer) or an Enroot sqsh on a machine that may have neither,
the way `kit reproduce` and the image tests do."""

from __future__ import annotations

from kit.errors import ImageError


def argv(image, kit_args: list[str], binds: list[str], env: dict[str, str]) -> list[str]:
    """The command running `kit <kit_args>` in `image` (runtime apptainer or sqsh)."""
    raise ImageError(f"rerunning in a {image.runtime} artifact is not wired up on this machine yet",
                     fix="use --runtime docker or --runtime host")
