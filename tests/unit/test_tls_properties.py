"""``jdbc.properties.*`` TLS settings (core/tls.py): one parser for sources and the JDBC
sink, case-insensitive as Spark lower-cases option keys, refusing what it does not know."""

from __future__ import annotations

import ssl

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import OptionError
from sparkcdc.core.tls import MYSQL_TLS, POSTGRES_TLS, TlsProperties, mysql_ssl_context
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig

FAMILIES = st.sampled_from([MYSQL_TLS, POSTGRES_TLS])


def _any_case(text: str) -> st.SearchStrategy[str]:
    return st.tuples(*(st.sampled_from([c.lower(), c.upper()]) for c in text)).map("".join)


@given(FAMILIES.flatmap(lambda f: st.tuples(st.just(f), st.data())))
def test_names_and_modes_are_taken_in_any_case(case: tuple[TlsProperties, st.DataObject]) -> None:
    family, data = case
    names = data.draw(st.lists(st.sampled_from(family.names), unique=True, min_size=1))
    mode = data.draw(st.sampled_from(family.modes))
    group = {data.draw(_any_case(n)): mode if n == family.mode else f"/{n}" for n in names}
    if family.ca in names and family.mode in names and mode in family.unverified:
        with pytest.raises(OptionError, match="does not verify the server"):
            family.parse(group, "ctx")
        return
    parsed = family.parse(group, "ctx")
    defaulted = {family.mode} if family.ca in names else set()
    assert set(parsed) == set(names) | defaulted  # canonical spelling, whatever the case given
    assert all(parsed[n] == (mode if n == family.mode else f"/{n}") for n in names)


@pytest.mark.parametrize(
    ("family", "ca", "verified"),
    [(POSTGRES_TLS, "sslrootcert", "verify-full"), (MYSQL_TLS, "sslCa", "verify_identity")],
)
def test_a_ca_given_turns_verification_on(family: TlsProperties, ca: str, verified: str) -> None:
    """#63: a CA alone used to leave libpq at 'prefer' and MySQL at 'required', neither of
    which checks the server's certificate against it."""
    assert family.parse({ca: "/ca.pem"}, "ctx") == {ca: "/ca.pem", family.mode: verified}
    for mode in family.unverified:
        with pytest.raises(OptionError, match=f"names a CA, but .*{mode}.* does not verify"):
            family.parse({ca: "/ca.pem", family.mode: mode}, "ctx")
    assert family.parse({}, "ctx") == {}  # nothing given: the driver's default


def test_unknown_properties_and_modes_name_what_is_valid() -> None:
    with pytest.raises(OptionError) as unknown:
        POSTGRES_TLS.parse({"sslCa": "x"}, "jdbc sink (postgresql target)")
    assert str(unknown.value) == (
        "jdbc sink (postgresql target): unsupported option 'jdbc.properties.sslCa'. Supported: "
        "jdbc.properties.sslmode, jdbc.properties.sslrootcert, jdbc.properties.sslcert, "
        "jdbc.properties.sslkey"
    )
    with pytest.raises(OptionError, match="Valid values: disabled, preferred, required"):
        MYSQL_TLS.parse({"sslmode": "verify-full"}, "mysql-cdc")


def test_the_sink_takes_the_names_of_its_target_family() -> None:
    def tls(url: str, **options: str) -> dict[str, str]:
        given = {f"jdbc.properties.{k}": v for k, v in options.items()}
        return dict(JdbcSinkConfig.from_options({"url": url, "username": "u", **given}).tls)

    assert tls("mariadb://h/d", sslmode="VERIFY_CA", sslca="/ca.pem") == {
        "sslMode": "VERIFY_CA",
        "sslCa": "/ca.pem",
    }
    assert tls("postgresql://h/d", sslmode="verify-full") == {"sslmode": "verify-full"}
    assert tls("postgresql://h/d") == {}
    with pytest.raises(OptionError, match=r"\(mysql target\): unsupported .*sslrootcert"):
        tls("mysql://h/d", sslrootcert="/ca.pem")


def test_mysql_modes_become_a_context_that_never_falls_back_to_clear_text() -> None:
    assert mysql_ssl_context({}) is None
    assert mysql_ssl_context({"sslMode": "DISABLED"}) is None
    for mode in ("preferred", "required"):
        context = mysql_ssl_context({"sslMode": mode})
        assert context is not None and context.verify_mode == ssl.CERT_NONE
    verify_ca = mysql_ssl_context({"sslMode": "verify_ca"})
    assert verify_ca is not None and verify_ca.verify_mode == ssl.CERT_REQUIRED
    assert not verify_ca.check_hostname
    identity = mysql_ssl_context({"sslMode": "verify_identity"})
    assert identity is not None and identity.check_hostname
    key_only = mysql_ssl_context({"sslKey": "/never-read.key"})  # read only with sslCert
    assert key_only is not None  # another ssl* property alone means 'required'


def test_signal_consumer_settings_reach_both_connectors_configs() -> None:
    from sparkcdc.connectors.registry import connector

    common = {
        "hostname": "h",
        "username": "u",
        "password": "p",
        "signal.kafka.topic": "signals",
        "signal.kafka.bootstrap.servers": "b:9093",
        "signal.consumer.security.protocol": "SSL",
        "signal.consumer.ssl.ca.location": "/ca.pem",
    }
    specific = {
        "mysql": {"database-name": "d", "table-name": "t"},
        "postgres": {"database-name": "d", "schema-name": "s", "table-name": "t", "slot.name": "x"},
    }
    for name, options in specific.items():
        config = connector(name).parse_config({**common, **options})
        assert config.signal_consumer == {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem"}
