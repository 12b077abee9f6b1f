"""Builds sparkcdc's one C extension, the binlog row decoder (docs/binlog-decoder.md).

Everything else about the package lives in pyproject.toml; setuptools merges the two, so
``pip install -e .`` (scripts/bootstrap.sh) compiles the decoder with the system C compiler.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sparkcdc.connectors.mysql.rowdecode._rowdecode",
            sources=["csrc/rowdecode.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-unused-function"],
        )
    ]
)
