"""TLS, bearer tokens, users and kubeconfig files for ``gpusched serve``.

On loopback the server speaks plain HTTP without credentials (like ``kubectl proxy``). Any other
bind address needs TLS and tokens: :func:`prepare` makes a self-signed certificate with the
``openssl`` command (EC P-256; subjectAltName: the bind address, localhost, 127.0.0.1, and with
a wildcard bind (``0.0.0.0``, ``::``) every local address, the host name and the
``--advertise-address``), and two random tokens (``secrets.token_urlsafe``): an admin token and
a read-only one. Kubeconfigs (mode 0600, like the key) embed the CA and one token each. The same
writer serves ``--require-token`` on loopback (tokens, plain HTTP).

Users (:class:`User`): the admin token is user ``gpusched-admin`` (every verb), the read-only
token ``gpusched-readonly`` (get, list, watch; a write is 403 Forbidden with kube-apiserver's
message, :func:`forbidden_message`). With ``--client-ca-file`` a client certificate signed by
that CA authenticates as its CN; group (O) ``system:masters`` makes it an admin, as in
kube-apiserver, any other a read-only user. Tokens are compared in constant time
(``hmac.compare_digest``) and never logged.

Neighbours: ``cli.serve`` (commands), ``server.guards`` (authenticates each request),
``server.app`` (TLS context).
"""

from __future__ import annotations

from typing import Any

import base64
import fcntl
import hmac
import ipaddress
import os
import secrets
import shutil
import socket
import ssl
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gpusched.errors import UsageError

CLUSTER_NAME = "gpusched"
OPENSSL_TIMEOUT_SECONDS = 60
ADMIN_USER, READONLY_USER = "gpusched-admin", "gpusched-readonly"
ADMIN_GROUP = "system:masters"          # kube-apiserver's superuser group
WILDCARDS = ("0.0.0.0", "::", "")
SIOCGIFADDR = 0x8915
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True, slots=True)
class User:
    name: str
    admin: bool


ANONYMOUS_ADMIN = User("system:anonymous", True)     # loopback without --require-token


@dataclass(frozen=True, slots=True)
class Credentials:
    token: str | None
    cert_file: Path | None
    key_file: Path | None
    readonly_token: str | None = None
    client_ca: Path | None = None

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.cert_file is None or self.key_file is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        if self.client_ca is not None:           # optional client certificates (kubectl's
            context.load_verify_locations(str(self.client_ca))   # client-certificate-data)
            context.verify_mode = ssl.CERT_OPTIONAL
        return context


@dataclass(frozen=True)
class Authenticator:
    """Who a request is: a bearer token or a verified client certificate; None: unauthenticated."""

    tokens: dict[str, User] = field(default_factory=dict)
    client_certs: bool = False

    @property
    def required(self) -> bool:
        return bool(self.tokens) or self.client_certs

    def authenticate(self, authorization: str, peercert: dict[str, Any] | None = None) -> User | None:
        if not self.required:
            return ANONYMOUS_ADMIN
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and given.strip():
            found = None
            for token, user in self.tokens.items():      # every token is compared (no early out)
                if hmac.compare_digest(given.strip().encode(), token.encode()):
                    found = user
            if found is not None:
                return found
        if self.client_certs and peercert:
            return user_of_certificate(peercert)
        return None


def user_of_certificate(peercert: dict[str, Any]) -> User | None:
    """kube-apiserver's x509 authenticator: CN is the user, each O a group."""
    names = [(k, v) for rdn in peercert.get("subject", ()) for k, v in rdn]
    common = [v for k, v in names if k == "commonName"]
    if not common:
        return None
    groups = [v for k, v in names if k == "organizationName"]
    return User(common[0], ADMIN_GROUP in groups)


def authenticator(credentials: "Credentials") -> Authenticator:
    tokens: dict[str, User] = {}
    if credentials.token:
        tokens[credentials.token] = User(ADMIN_USER, True)
    if credentials.readonly_token:
        tokens[credentials.readonly_token] = User(READONLY_USER, False)
    return Authenticator(tokens, credentials.client_ca is not None)


def forbidden_message(user: str, verb: str, resource: str, group: str, namespace: str,
                      name: str, path: str) -> str:
    """kube-apiserver's 403 message: apimachinery ``errors.NewForbidden`` around apiserver
    ``responsewriters.forbiddenMessage`` (handlers/responsewriters/errors.go).

    >>> forbidden_message("u", "create", "pods", "", "default", "", "/api/v1/namespaces/default/pods")
    'pods is forbidden: User "u" cannot create resource "pods" in API group "" in the namespace "default"'
    >>> forbidden_message("u", "post", "", "", "", "", "/version")
    'forbidden: User "u" cannot post path "/version"'
    """
    if not resource:
        return f'forbidden: User "{user}" cannot {verb} path "{path}"'
    base = resource.split("/")[0]
    qualified = f"{base}.{group}" if group else base
    if namespace:
        reason = (f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" '
                  f'in the namespace "{namespace}"')
    else:
        reason = f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" at the cluster scope'
    return f'{qualified} "{name}" is forbidden: {reason}' if name else f"{qualified} is forbidden: {reason}"


def local_addresses() -> list[str]:
    """Every address of this machine's interfaces (IPv4 by SIOCGIFADDR, IPv6 from
    /proc/net/if_inet6 except link-local), loopback included, sorted."""
    found = {"127.0.0.1", "::1"}
    for _index, name in socket.if_nameindex():
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                packed = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            found.add(socket.inet_ntoa(packed[20:24]))
        except OSError:
            continue                      # no IPv4 address on this interface
    try:
        lines = Path("/proc/net/if_inet6").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[3] != "20":           # 0x20: link-local scope
            found.add(str(ipaddress.ip_address(bytes.fromhex(fields[0]))))
    return sorted(found, key=lambda a: (":" in a, a))


def advertised_address(host: str, advertise: str | None) -> str:
    """The address clients use: ``--advertise-address``, else the bind address, else (wildcard)
    the first non-loopback IPv4 address, as kube-apiserver picks its advertise address."""
    if advertise:
        return advertise
    if host not in WILDCARDS:
        return host
    outside = [a for a in local_addresses() if ":" not in a and not ipaddress.ip_address(a).is_loopback]
    return outside[0] if outside else "127.0.0.1"


def certificate_names(host: str, advertise: str | None = None) -> list[str]:
    """The subjectAltName entries for a bind address (see the module docstring)."""
    hosts = ["localhost", "127.0.0.1"]
    if host in WILDCARDS:
        hosts += local_addresses() + [socket.gethostname()]
    else:
        hosts.append(host)
    if advertise:
        hosts.append(advertise)
    names: list[str] = []
    for entry in hosts:
        try:
            name = f"IP:{ipaddress.ip_address(entry)}"
        except ValueError:
            name = f"DNS:{entry}"
        if name not in names:
            names.append(name)
    return names


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


def make_certificate(directory: Path, host: str, advertise: str | None = None) -> tuple[Path, Path]:
    """A self-signed certificate for ``host`` (:func:`certificate_names`) with ``openssl``;
    (cert, key), both 0600."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise UsageError("binding a non-loopback address needs TLS, and the openssl command was "
                         "not found to make a certificate")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "serve.crt", directory / "serve.key"
    names = certificate_names(host, advertise)
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
    os.chmod(key, 0o600)
    os.chmod(cert, 0o600)
    return cert, key


def kubeconfig(server: str, token: str | None = None, ca_file: Path | None = None) -> dict[str, Any]:
    """A kubeconfig with cluster/context ``gpusched`` and a user with the given credentials."""
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    user: dict[str, Any] = {"token": token} if token else {}
    return {"apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
            "users": [{"name": CLUSTER_NAME, "user": user}],
            "contexts": [{"name": CLUSTER_NAME,
                          "context": {"cluster": CLUSTER_NAME, "user": CLUSTER_NAME}}],
            "current-context": CLUSTER_NAME}


def kubeconfig_text(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(path: Path, config: dict[str, Any]) -> Path:
    """Write ``config`` to ``path`` readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(kubeconfig_text(config))
    os.chmod(path, 0o600)
    return path


def prepare(directory: Path, host: str, require_token: bool, advertise: str | None = None,
            client_ca: Path | None = None) -> Credentials:
    """Credentials for a bind address: none on loopback (unless asked), else TLS and tokens."""
    if is_loopback(host) and client_ca is None:
        if not require_token:
            return Credentials(None, None, None)
        return Credentials(new_token(), None, None, new_token())
    cert, key = make_certificate(directory, host, advertise)
    return Credentials(new_token(), cert, key, new_token(), client_ca)
