"""Test certificates made with ``openssl``: a CA, a server certificate for 127.0.0.1 signed
by it, and an unrelated CA (for "the server is not who it says" failures)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN=sparkcdc {name}",
        cwd=directory,
    )  # fmt: skip


def issue_certificates(directory: Path) -> Path:
    """Write ``ca.pem``, ``server.pem``/``server.key`` (CN and subjectAltName 127.0.0.1,
    signed by ``ca.pem``) and ``other-ca.pem`` into ``directory``; return it."""
    _ca(directory, "ca")
    _ca(directory, "other-ca")
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1",
        cwd=directory,
    )  # fmt: skip
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.cnf",
        cwd=directory,
    )  # fmt: skip
    return directory
