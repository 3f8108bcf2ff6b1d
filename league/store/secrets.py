"""A store URL's password stays out of every file League writes.

A URL may name environment variables (`redis://:${LEAGUE_REDIS_PASSWORD}@host:6379/0`):
they are filled in only when the store is opened, so config.json, logs and errors
keep the reference, never the value. A URL given with a literal password is written
to files with the password replaced by `${LEAGUE_STORE_PASSWORD}`: a resumed run
then reads it from that variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

PASSWORD_VARIABLE = "LEAGUE_STORE_PASSWORD"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class MissingVariableError(ValueError):
    """A store URL names an environment variable that is not set."""


def expand_env(url: str, environ: Mapping[str, str] | None = None) -> str:
    """`url` with every `${NAME}` replaced by that environment variable's value."""
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise MissingVariableError(
                f"the store URL names ${{{name}}}, which is not set in the environment "
                f"(export {name}=... before the command)"
            )
        return env[name]

    return _REFERENCE.sub(value, url)


def literal_password(url: str | None) -> bool:
    """Whether `url` carries a password itself (not a `${NAME}` reference)."""
    if not url or "://" not in url:
        return False
    try:
        password = urlsplit(url).password
    except ValueError:
        return False
    return bool(password) and not _REFERENCE.fullmatch(password)


def url_for_files(url: str | None) -> str | None:
    """The form of `url` that may be written to a file: a literal password becomes
    `${LEAGUE_STORE_PASSWORD}`; references and password-free URLs stay as they are."""
    if url is None or not literal_password(url):
        return url
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[1]
    netloc = f"{parts.username or ''}:${{{PASSWORD_VARIABLE}}}@{host}"
    return parts._replace(netloc=netloc).geturl()
