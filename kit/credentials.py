"""What a credential looks like, by its name and by its value: the one test every place kit could pass a
secret on (a site's forward_env names, the values written into a job's script or environment) applies.
The value shapes are the providers' published token formats and a URL's user:password part."""

from __future__ import annotations

import re

# variable names that hold secrets: whole words of the name (its parts between underscores) or the
# words providers use inside one (GITHUB_TOKEN, MY_APIKEY, SLACK_WEBHOOK_URL, DB_PASSWORD, HF_PAT)
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|APIKEY|WEBHOOK|NETRC|COOKIE"
                         r"|(?:^|_)(?:PAT|AUTH|KEY|DSN)(?:_|$)", re.IGNORECASE)

# Hugging Face user and organisation access tokens: also what publish's scanner looks for (kit.results.secrets)
HUGGING_FACE_TOKENS = (re.compile(r"hf_[A-Za-z0-9]{30,}"), re.compile(r"api_org_[A-Za-z0-9]{30,}"))

_VALUE_SHAPES = (
    ("a URL with a password", re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@")),
    ("a Hugging Face token", re.compile(r"\b(?:" + "|".join(p.pattern for p in HUGGING_FACE_TOKENS) + ")")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
)


def secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret (NAME_PATH, a file's place, does not)."""
    return SECRET_NAME.search(name) is not None and not name.upper().endswith("_PATH")


def credential_shape(value: str) -> str | None:
    """What credential `value` holds ("a GitHub token", "a URL with a password"), or None."""
    for what, shape in _VALUE_SHAPES:
        if shape.search(value):
            return what
    return None
