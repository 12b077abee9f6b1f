"""One TLS setting and one RSA-key policy for every connection the source opens: the
planning and classic snapshot connections (mysqlclient), the native snapshot reader
(libmariadb in csrc/mysqlarrow.c) and the binlog readers (PyMySQL).

TLS: ``jdbc.properties.sslMode`` etc. (Connector/J's names), one mode for every
connection; a given ``sslCa`` always verifies the server (core/tls.py).

MySQL 8's default authentication, ``caching_sha2_password``, sends the password in clear
over TLS, and without TLS encrypted with the server's RSA public key. A client that fetches
that key over the same clear-text connection hands the password to whoever sits in the
middle (it sends its own key), so, as MySQL's own clients and Connector/J do, the key comes
from a file the user names (``jdbc.properties.serverRSAPublicKeyFile``) or is fetched only
when the user allows it (``jdbc.properties.allowPublicKeyRetrieval: true``). With neither,
libmariadb is given a file that holds no key (it would otherwise always fetch one) and
PyMySQL a value that is none, so such a login fails before any password leaves, and
:func:`key_refused` turns the failure into the error that says what to do. Accounts with
``mysql_native_password``, and logins the server answers from its cache, need no key.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.core.errors import OptionError, SourceConfigurationError

#: What the "no key" file and value hold: not a PEM key, so the RSA step fails.
_NOT_A_KEY = b"sparkcdc: no RSA key; set jdbc.properties.serverRSAPublicKeyFile\n"
_marker_lock = threading.Lock()
_marker: Path | None = None

#: libmariadb's error for a failed authentication plugin step (CR_AUTH_PLUGIN_ERR), and
#: its generic client error a plugin's CR_ERROR becomes.
AUTH_PLUGIN_ERRORS = frozenset({2059, 2061, 2000})


def tls_properties(config: MySqlSourceConfig) -> dict[str, str]:
    """The TLS properties with their mode (``required`` when only others are given; a CA
    alone is ``verify_identity``, and a mode that would ignore a CA is refused, when the
    options are parsed: core/tls.py); empty: none."""
    ssl = config.ssl
    if not ssl:
        return {}
    return {**ssl, "sslMode": ssl.get("sslMode", "required").lower()}


def tls_on(config: MySqlSourceConfig) -> bool:
    return tls_properties(config).get("sslMode", "disabled") != "disabled"


def key_file(config: MySqlSourceConfig) -> str | None:
    """For libmariadb (``server_public_key``): the user's key file, None where the key may
    be fetched or is not needed (TLS), else a file holding no key (never fetch)."""
    if tls_on(config) or config.allow_public_key_retrieval:
        return None
    if config.server_public_key_file:
        return _readable(config.server_public_key_file)
    return str(_no_key_file())


def key_bytes(config: MySqlSourceConfig) -> bytes | None:
    """For PyMySQL (``server_public_key``): as :func:`key_file`, the key itself."""
    path = key_file(config)
    if path is None:
        return None
    return Path(path).read_bytes()


def _readable(path: str) -> str:
    try:
        with open(path, "rb") as found:
            found.read(1)
    except OSError as exc:
        raise OptionError(
            f"mysql-cdc: option 'jdbc.properties.serverRSAPublicKeyFile': cannot read {path} "
            f"({exc.strerror}); give the server's RSA public key in PEM (MySQL writes it to "
            "public_key.pem in its datadir; SHOW STATUS LIKE 'Caching_sha2_password_rsa_"
            "public_key' prints it)"
        ) from None
    return path


def _no_key_file() -> Path:
    global _marker
    with _marker_lock:
        if _marker is None or not _marker.exists():
            descriptor, name = tempfile.mkstemp(prefix="sparkcdc-no-rsa-key-", suffix=".pem")
            with os.fdopen(descriptor, "wb") as out:
                out.write(_NOT_A_KEY)
            _marker = Path(name)
        return _marker


def key_refused(config: MySqlSourceConfig, exc: BaseException) -> SourceConfigurationError | None:
    """The error to raise when ``exc`` is a caching_sha2_password login that needed the
    server's RSA key this policy withholds; None for any other failure."""
    if key_file(config) is None or config.server_public_key_file:
        return None
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[-1] if exc.args else exc)
    plugin = code in AUTH_PLUGIN_ERRORS or "public key" in text.lower() or "RSA" in text
    if not plugin and not isinstance(exc, ValueError):
        return None
    return SourceConfigurationError(
        f"cannot log in to {config.hostname}:{config.port} as '{config.username}': the account "
        "uses caching_sha2_password (MySQL 8's default), which over a connection without TLS "
        "sends the password encrypted with the server's RSA public key, and sparkcdc does not "
        "fetch that key over clear text (a man in the middle could send its own and read the "
        "password). Use TLS (jdbc.properties.sslMode, with jdbc.properties.sslCa to verify the "
        "server), or give the key (jdbc.properties.serverRSAPublicKeyFile: the server's "
        "public_key.pem), or allow fetching it (jdbc.properties.allowPublicKeyRetrieval: true)"
    )
