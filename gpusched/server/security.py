"""TLS, bearer tokens and kubeconfig files for ``gpusched serve``.

On loopback the server speaks plain HTTP without credentials (like ``kubectl proxy``). Any other
bind address needs TLS and a token: :func:`prepare_remote` makes a self-signed certificate with
the ``openssl`` command (EC P-256, subjectAltName for the address, localhost and 127.0.0.1), a
random token (``secrets.token_urlsafe``), and a kubeconfig (mode 0600) embedding both. The same
kubeconfig writer serves ``--require-token`` on loopback (token, plain HTTP).

Neighbours: ``cli.serve`` (commands), ``server.app`` (checks the token, wraps the socket).
"""

from __future__ import annotations

import base64
import ipaddress
import os
import secrets
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpusched.errors import UsageError

CLUSTER_NAME = "gpusched"
OPENSSL_TIMEOUT_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str | None
    cert_file: Path | None
    key_file: Path | None

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.cert_file is None or self.key_file is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1`` and ``localhost`` are loopback; everything else is not.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def make_certificate(directory: Path, host: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``host`` (plus localhost) with ``openssl``; (cert, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise UsageError("binding a non-loopback address needs TLS, and the openssl command was "
                         "not found to make a certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "serve.crt", directory / "serve.key"
    names = ["DNS:localhost", "IP:127.0.0.1"]
    try:
        ipaddress.ip_address(host)
        names.append(f"IP:{host}")
    except ValueError:
        names.append(f"DNS:{host}")
    command = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
               "-nodes", "-days", "365", "-subj", f"/CN={CLUSTER_NAME}",
               "-addext", "subjectAltName=" + ",".join(names),
               "-addext", "basicConstraints=critical,CA:TRUE",
               "-keyout", str(key), "-out", str(cert)]
    old_umask = os.umask(0o077)
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=OPENSSL_TIMEOUT_SECONDS, check=False)
    finally:
        os.umask(old_umask)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise UsageError(f"openssl could not make a certificate: {last}")
    return cert, key


def kubeconfig(server: str, token: str | None = None, ca_file: Path | None = None) -> dict:
    """A kubeconfig with cluster/context ``gpusched`` and a user with the given credentials."""
    cluster: dict = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    user: dict = {"token": token} if token else {}
    return {"apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
            "users": [{"name": CLUSTER_NAME, "user": user}],
            "contexts": [{"name": CLUSTER_NAME,
                          "context": {"cluster": CLUSTER_NAME, "user": CLUSTER_NAME}}],
            "current-context": CLUSTER_NAME}


def kubeconfig_text(config: dict) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(path: Path, config: dict) -> Path:
    """Write ``config`` to ``path`` readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(kubeconfig_text(config))
    os.chmod(path, 0o600)
    return path


def prepare(directory: Path, host: str, require_token: bool) -> Credentials:
    """Credentials for a bind address: none on loopback (unless asked), else TLS and a token."""
    if is_loopback(host):
        return Credentials(new_token() if require_token else None, None, None)
    cert, key = make_certificate(directory, host)
    return Credentials(new_token(), cert, key)
