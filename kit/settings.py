"""kit's settings read from the environment by the code itself (not through a command's option): their
names, so that an error can say where a value came from, and one reader of a number among them."""

from __future__ import annotations

import os

from kit.errors import ConfigError

# every KIT_* variable kit's code reads itself (a path, a tool, a size); an option's variable is click's
SETTING_VARIABLES = ("KIT_CACHE_DIR", "KIT_SSH_CONTROL_DIR", "KIT_KEYS_DIR", "KIT_IMAGES_LOCK", "KIT_IMAGES_DIR",
                     "KIT_SQSH_TOOL", "KIT_SQSH_TMPFS", "KIT_SIF_TMP_MB", "KIT_SIF_COMPRESSION", "KIT_DOCKER_TIMEOUT",
                     "KIT_APPTAINER_HELPER", "KIT_SIGNING_KEY_PATH", "KIT_COMMIT")


def setting_int(name: str, default: int, minimum: int = 1) -> int:
    """The whole number a KIT_* setting holds (`default` when unset or empty); a ConfigError naming the
    variable and what it takes otherwise."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ConfigError(f"{name}={text!r} is not a whole number of at least {minimum}",
                          fix=f"set {name} to one (default {default}), or unset it")
    return value
