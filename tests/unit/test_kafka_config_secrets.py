"""Kafka client settings keep their secrets out of reprs (#63): a config in a log line or
an exception used to show the SASL password of ``sasl.jaas.config``."""

from __future__ import annotations

import pickle

from sparkcdc.core.secret import SecretSettings
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.spark.kafka.source import Malformed

PASSWORD = "hunter2-kafka"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="u" password="{PASSWORD}";'
)
SECRETS = {
    "sasl.jaas.config": JAAS,
    "ssl.key.password": PASSWORD,
    "sasl.oauthbearer.client.secret": PASSWORD,
    "ssl.keystore.key": PASSWORD,
}


def test_the_kafka_sinks_config_hides_them() -> None:
    options = {"properties.bootstrap.servers": "b:9092", "properties.acks": "all"}
    config = KafkaSinkConfig.from_options(
        {**options, **{f"properties.{k}": v for k, v in SECRETS.items()}}
    )
    shown = repr(config) + str(config.producer)
    assert PASSWORD not in shown and "'acks': 'all'" in shown
    assert config.producer["sasl.jaas.config"] == JAAS  # the client still gets them
    assert pickle.loads(pickle.dumps(config)) == config


def test_the_dead_letter_producers_settings_hide_them() -> None:
    malformed = Malformed("dead-letter", "dlq", "b:9092", dict(SECRETS))
    assert PASSWORD not in repr(malformed)
    assert dict(malformed.producer_options) == SECRETS


def test_only_secret_names_are_hidden() -> None:
    settings = SecretSettings({"security.protocol": "SASL_SSL", "sasl.password": "x"})
    assert (
        repr(settings)
        == "SecretSettings({'security.protocol': 'SASL_SSL', 'sasl.password': '******'})"
    )
