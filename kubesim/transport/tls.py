"""HTTPS for ``kubesim serve --tls``: a throwaway CA, a loopback server certificate and an
administrator's client certificate.

:func:`generate` makes a self-signed CA and a server certificate it signs, valid for
``127.0.0.1``, ``::1`` and ``localhost``, and a client certificate for ``kubernetes-admin`` in
``kubeadm:cluster-admins`` (the user of a kubeadm cluster's ``admin.conf``), writes the server's
PEM files to a fresh private directory and returns them as :class:`TLSFiles`.
:meth:`TLSFiles.server_context` builds the server's :class:`ssl.SSLContext`, which accepts client
certificates the CA signed; clients trust :attr:`TLSFiles.ca_pem` and present the client
certificate (``kubesim serve`` puts them in the kubeconfig as ``certificate-authority-data``,
``client-certificate-data`` and ``client-key-data``, as kind's kubeconfig has them).

The keys are ECDSA P-256 and never leave the directory (mode 0700) the caller removes with
:meth:`TLSFiles.cleanup`. Certificates are valid from one day before generation for 30 days:
real time, since TLS peers check validity against their own wall clocks, not the server's
virtual one. Needs the ``cryptography`` package (``pip install kubesim[tls]``).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import shutil
import ssl
import tempfile
from dataclasses import dataclass

SERVER_NAMES = ("localhost",)
SERVER_ADDRESSES = ("127.0.0.1", "::1")
CLIENT_USER = "kubernetes-admin"
CLIENT_GROUP = "kubeadm:cluster-admins"
VALIDITY = _dt.timedelta(days=30)


@dataclass(frozen=True)
class TLSFiles:
    """Where the generated PEM files are, and the CA certificate itself."""

    directory: str
    ca_cert: str
    server_cert: str
    server_key: str
    ca_pem: bytes
    # The administrator's client certificate and key (PEM), for the kubeconfig.
    client_cert_pem: bytes = b""
    client_key_pem: bytes = b""

    def server_context(self) -> ssl.SSLContext:
        """A server-side context: TLS 1.2 or newer, the generated certificate and key, and
        client certificates the CA signed accepted (optional: a client may present none)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.server_cert, self.server_key)
        context.load_verify_locations(cadata=self.ca_pem.decode("ascii"))
        context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client-side context that trusts only the generated CA (hostnames are checked)."""
        return ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _write(path: str, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def generate(directory: str | None = None) -> TLSFiles:
    """Generate a CA and a loopback server certificate as ``ca.crt``, ``tls.crt``, ``tls.key``.

    ``directory`` must not hold those files yet; by default a new private temporary directory.
    """
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            "TLS needs the 'cryptography' package: pip install 'kubesim[tls]'"
        ) from exc

    if directory is None:
        directory = tempfile.mkdtemp(prefix="kubesim-tls-")
    now = _dt.datetime.now(_dt.timezone.utc)
    not_before, not_after = now - _dt.timedelta(days=1), now + VALIDITY

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    alternative_names: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVER_NAMES]
    alternative_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in SERVER_ADDRESSES]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )

    # kubeadm's admin.conf user: the API server maps the certificate's CN to the user name and
    # its O to groups (x509 request authentication).
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, CLIENT_GROUP),
                    x509.NameAttribute(NameOID.COMMON_NAME, CLIENT_USER),
                ]
            )
        )
        .issuer_name(ca_name)
        .public_key(client_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )

    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    files = TLSFiles(
        directory=directory,
        ca_cert=os.path.join(directory, "ca.crt"),
        server_cert=os.path.join(directory, "tls.crt"),
        server_key=os.path.join(directory, "tls.key"),
        ca_pem=ca_pem,
        client_cert_pem=client_cert.public_bytes(serialization.Encoding.PEM),
        client_key_pem=client_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    _write(files.ca_cert, ca_pem)
    _write(files.server_cert, server_cert.public_bytes(serialization.Encoding.PEM))
    _write(
        files.server_key,
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    return files


__all__ = [
    "CLIENT_GROUP",
    "CLIENT_USER",
    "SERVER_ADDRESSES",
    "SERVER_NAMES",
    "TLSFiles",
    "generate",
]
