"""TLS settings as the JDBC drivers name them (``jdbc.properties.*``), for every engine.

Sources and the JDBC sink take the same property names a Flink CDC or Spark JDBC user
already writes: MySQL Connector/J's ``sslMode``/``sslCa``/``sslCert``/``sslKey`` and
PgJDBC's (which are libpq's) ``sslmode``/``sslrootcert``/``sslcert``/``sslkey``. This
module validates them once, in one place, so a source and a sink of the same database
accept and refuse exactly the same settings, and turns the MySQL ones into a TLS context
for pure-Python clients (PyMySQL). Stdlib only: no driver is imported here.

Defaults (docs/security.md): without any property, each driver's own (libpq and PgJDBC:
``prefer``, TLS when the server offers it, unverified; MySQL: ``preferred``, which the
PyMySQL connections here make ``required`` once anything is set). A CA given without a
mode verifies the server's certificate and host name (``verify-full``,
``verify_identity``); a CA with a mode that would not use it is refused.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from sparkcdc.core.errors import OptionError

PREFIX = "jdbc.properties."


@dataclass(frozen=True)
class TlsProperties:
    """The TLS property names and modes one database family accepts."""

    names: tuple[str, ...]  #: canonical spelling (Spark lower-cases option keys)
    mode: str  #: the property that holds the mode
    modes: tuple[str, ...]
    ca: str  #: the property that names the CA file
    #: The mode when a CA is given without one: the certificate and host name verified.
    with_ca: str
    #: Modes that, given a CA, still do not verify the server: refused then, since a CA
    #: given and not used looks safe and is not.
    unverified: tuple[str, ...]

    def parse(self, group: Mapping[str, str], context: str) -> dict[str, str]:
        """The ``jdbc.properties.*`` group (keys without the prefix, any case) as a dict
        under canonical names; an unknown property or mode is an :class:`OptionError`
        that names it and lists what is valid."""
        canonical = {name.lower(): name for name in self.names}
        tls = {canonical.get(key.lower(), key): value for key, value in group.items()}
        unknown = [key for key in tls if key not in self.names]
        if unknown:
            raise OptionError(
                f"{context}: unsupported option '{PREFIX}{unknown[0]}'. Supported: "
                + ", ".join(f"{PREFIX}{name}" for name in self.names)
            )
        if self.mode in tls and tls[self.mode].lower() not in self.modes:
            raise OptionError(
                f"{context}: option '{PREFIX}{self.mode}' has invalid value "
                f"'{tls[self.mode]}'. Valid values: {', '.join(self.modes)}"
            )
        if self.ca in tls:  # a CA given: the server's certificate is checked against it
            mode = tls.setdefault(self.mode, self.with_ca)
            if mode.lower() in self.unverified:
                verifying = [m for m in self.modes if m not in self.unverified]
                raise OptionError(
                    f"{context}: option '{PREFIX}{self.ca}' names a CA, but "
                    f"'{PREFIX}{self.mode}: {mode}' does not verify the server with it. Use "
                    f"{' or '.join(verifying)} (without '{PREFIX}{self.mode}': {self.with_ca}), "
                    f"or leave '{PREFIX}{self.ca}' out"
                )
        return tls


#: MySQL Connector/J's names; the C client and PyMySQL are configured from them.
MYSQL_TLS = TlsProperties(
    names=("sslMode", "sslCa", "sslCert", "sslKey"),
    mode="sslMode",
    modes=("disabled", "preferred", "required", "verify_ca", "verify_identity"),
    ca="sslCa",
    with_ca="verify_identity",
    unverified=("disabled", "preferred", "required"),
)
#: PgJDBC's names, which are libpq's: passed to psycopg as they are.
#: (``require`` with a root certificate is libpq's ``verify-ca``.)
POSTGRES_TLS = TlsProperties(
    names=("sslmode", "sslrootcert", "sslcert", "sslkey"),
    mode="sslmode",
    modes=("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    ca="sslrootcert",
    with_ca="verify-full",
    unverified=("disable", "allow", "prefer"),
)


def mysql_ssl_context(tls: Mapping[str, str]) -> ssl.SSLContext | None:
    """MySQL TLS properties (parsed by :data:`MYSQL_TLS`) as a context for PyMySQL, or
    None for clear text (``disabled``, or no property at all).

    ``preferred`` cannot fall back per connection with a fixed context; it is treated as
    ``required``, so data is never sent in clear text when TLS was asked for.
    """
    mode = tls.get("sslMode", "required" if tls else "disabled").lower()
    if mode == "disabled":
        return None
    context = ssl.create_default_context(cafile=tls.get("sslCa"))
    context.check_hostname = mode == "verify_identity"
    verify = mode in ("verify_ca", "verify_identity")
    context.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
    if "sslCert" in tls:
        context.load_cert_chain(tls["sslCert"], tls.get("sslKey"))
    return context
