"""A string that never shows itself in repr, str, logs or exception messages."""

from __future__ import annotations


class Secret:
    """Wraps a password; ``reveal()`` is the only way to read it (greppable on purpose)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('******')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._value,))


#: Parts of a client setting's name that say its value is a secret (Kafka's
#: ``sasl.jaas.config`` holds a password, ``ssl.key.password``, ``sasl.oauthbearer.client.
#: secret``, ``ssl.keystore.key``...) or an object store's key (delta-rs's
#: ``AWS_SECRET_ACCESS_KEY``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_SAS_KEY``,
#: ``GOOGLE_SERVICE_ACCOUNT_KEY``...).
SECRET_WORDS = (
    "password",
    "secret",
    "jaas",
    "token",
    "credential",
    "key.pem",
    "keystore.key",
    "access_key",
    "account_key",
    "sas_key",
    "service_account_key",
    "master_key",
)


def is_secret_setting(name: str) -> bool:
    """Whether a client setting named ``name`` holds a secret."""
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


class SecretSettings(dict[str, str]):
    """Client settings passed through to a driver (Kafka's ``properties.*``): a plain dict
    to the driver, but its repr shows ``******`` for every secret one, so a config's repr
    in a log or an exception never carries a SASL password."""

    def __repr__(self) -> str:
        shown = {k: "******" if is_secret_setting(k) else v for k, v in self.items()}
        return f"SecretSettings({shown!r})"

    __str__ = __repr__
