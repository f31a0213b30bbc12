"""A TLS-terminating, authenticating front for the Temporal dev server, which has neither.

:class:`Front` listens on loopback with TLS (its certificate from a test CA, see
:class:`PKI`), requires a client certificate of that CA (mTLS), and reads the client's
HTTP/2 frames: each request's header block (HEADERS and CONTINUATION frames, decoded with
HPACK in order, one decoder per connection) must carry ``authorization: Bearer <key>``.
The bytes of an authorised connection go to the dev server unchanged. A connection whose
first request lacks the key, or has another, never reaches the server: the front answers
it as a gRPC server answers an unauthenticated call (``grpc-status: 16``) and closes it;
one that sends a request without the key later is dropped. A client without a certificate
of the CA fails the TLS handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

import hpack
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY, CONTINUATION = 0x0, 0x1, 0x4, 0x7, 0x9
END_STREAM, END_HEADERS, PADDED, PRIORITY = 0x1, 0x4, 0x8, 0x20


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class PKI:
    """A test CA and certificates it signed, as PEM files in ``folder``: ``ca.pem``,
    ``server.pem`` / ``server.key`` (for ``server_name``), ``client.pem`` / ``client.key``;
    and ``stranger.pem`` / ``stranger.key``, a client of another CA."""

    folder: Path
    server_name: str = "temporal.test"

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        ca_key, ca = self._ca("portwright test CA")
        self._write("ca.pem", ca.public_bytes(serialization.Encoding.PEM))
        self._leaf("server", ca_key, ca, ExtendedKeyUsageOID.SERVER_AUTH,
                   [x509.DNSName(self.server_name),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        self._leaf("client", ca_key, ca, ExtendedKeyUsageOID.CLIENT_AUTH,
                   [x509.DNSName("worker.test")])
        other_key, other = self._ca("another CA")
        self._leaf("stranger", other_key, other, ExtendedKeyUsageOID.CLIENT_AUTH,
                   [x509.DNSName("stranger.test")])

    def path(self, name: str) -> Path:
        return self.folder / name

    def _write(self, name: str, data: bytes) -> None:
        self.path(name).write_bytes(data)
        self.path(name).chmod(0o600)

    @staticmethod
    def _builder(subject: x509.Name, issuer: x509.Name,
                 key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=2)))

    def _ca(self, common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (self._builder(_name(common), _name(common), key)
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True,
                    content_commitment=False, key_encipherment=False, data_encipherment=False,
                    key_agreement=False, encipher_only=False, decipher_only=False),
                    critical=True)
                .sign(key, hashes.SHA256()))
        return key, cert

    def _leaf(self, name: str, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate,
              usage: x509.ObjectIdentifier, names: list[x509.GeneralName]) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (self._builder(_name(name), ca.subject, key)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                               critical=True)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .sign(ca_key, hashes.SHA256()))
        self._write(f"{name}.pem", cert.public_bytes(serialization.Encoding.PEM))
        self._write(f"{name}.key", _pem_key(key))


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (len(payload).to_bytes(3, "big") + bytes([kind, flags])
            + stream.to_bytes(4, "big") + payload)


def _fragment(kind: int, flags: int, payload: bytes) -> bytes:
    """The header block fragment of a HEADERS or CONTINUATION frame's payload."""
    if kind != HEADERS:
        return payload
    start, end = 0, len(payload)
    if flags & PADDED:
        start, end = 1, len(payload) - payload[0]
    if flags & PRIORITY:
        start += 5
    return payload[start:end]


class Refused(Exception):
    """A request without the key (the reason is what the front records)."""


@dataclass
class Front:
    """The front: ``address`` (``127.0.0.1:port``) in front of ``upstream``."""

    upstream: str
    pki: PKI
    key: str
    refusals: list[str] = field(default_factory=list)
    """Why each refused connection was refused (``no authorization``, ``wrong key``)."""
    forwarded: int = 0
    """Connections that reached the upstream."""
    address: str = ""
    _loop: asyncio.AbstractEventLoop | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Front:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        # a client refused at the TLS handshake is no error of the front's
        self._loop.set_exception_handler(lambda loop, context: None)

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            server = self._loop.run_until_complete(asyncio.start_server(
                self._serve, "127.0.0.1", 0, ssl=self._context(),
                ssl_handshake_timeout=10))
            self.address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
            ready.set()
            try:
                self._loop.run_forever()
            finally:
                server.close()
                # every connection ended and its transport closed before the loop is
                pending = asyncio.all_tasks(self._loop)
                for task in pending:
                    task.cancel()
                self._loop.run_until_complete(
                    asyncio.gather(*pending, return_exceptions=True))
                for end in list(self._open):
                    end.close()
                self._loop.run_until_complete(asyncio.sleep(0.1))
                self._loop.run_until_complete(server.wait_closed())
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.close()

        self._thread = threading.Thread(target=run, name="auth-front", daemon=True)
        self._thread.start()
        assert ready.wait(timeout=30), "the front did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def _context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.pki.path("server.pem"), self.pki.path("server.key"))
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(self.pki.path("ca.pem"))
        context.set_alpn_protocols(["h2"])
        return context

    def _check(self, headers: list[tuple[str, str]]) -> None:
        found = [value for name, value in headers if name == "authorization"]
        if not found:
            raise Refused("no authorization")
        if found != [f"Bearer {self.key}"]:
            raise Refused("wrong key")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        pump: asyncio.Task[None] | None = None
        self._open.add(writer)
        try:
            held = await reader.readexactly(len(PREFACE))
            if held != PREFACE:
                return
            decoder = hpack.Decoder()
            block: list[bytes] = []  # frames of a header block not yet complete
            fragments = bytearray()
            opened: set[int] = set()
            while True:
                head = await reader.readexactly(9)
                length = int.from_bytes(head[:3], "big")
                kind, flags = head[3], head[4]
                stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
                frame = head + await reader.readexactly(length)
                if kind in (HEADERS, CONTINUATION):
                    block.append(frame)
                    fragments += _fragment(kind, flags, frame[9:])
                    if not flags & END_HEADERS:
                        continue
                    headers = [(str(n), str(v)) for n, v in decoder.decode(bytes(fragments))]
                    fragments.clear()
                    frames, block = b"".join(block), []
                    if stream not in opened:  # a request's headers, not its trailers
                        opened.add(stream)
                        self._check(headers)
                else:
                    frames = frame
                if upstream is None and kind in (HEADERS, CONTINUATION):
                    # the first request is authorised: what was held goes to the server
                    host, _, port = self.upstream.rpartition(":")
                    up_reader, upstream = await asyncio.open_connection(host, int(port))
                    self._open.add(upstream)
                    self.forwarded += 1
                    pump = asyncio.create_task(self._pump(up_reader, writer))
                    upstream.write(held)
                    held = b""
                if upstream is None:
                    held += frames
                    continue
                upstream.write(frames)
                await upstream.drain()
        except Refused as exc:
            self.refusals.append(str(exc))
            if upstream is None:
                await self._answer_unauthenticated(writer, stream, str(exc))
        except (asyncio.IncompleteReadError, ConnectionError, hpack.HPACKError, ssl.SSLError):
            pass
        finally:
            if pump is not None:
                pump.cancel()
            for end in (upstream, writer):
                if end is not None:
                    self._open.discard(end)
                    with contextlib.suppress(Exception):
                        end.close()
                        await end.wait_closed()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    @staticmethod
    async def _answer_unauthenticated(writer: asyncio.StreamWriter, stream: int,
                                      why: str) -> None:
        """What a gRPC server answers a call it does not authenticate: its SETTINGS, the
        call's status in a trailers-only response, and GOAWAY."""
        block = hpack.Encoder().encode([
            (":status", "200"), ("content-type", "application/grpc"),
            ("grpc-status", "16"), ("grpc-message", f"unauthenticated: {why}")])
        writer.write(_frame(SETTINGS, 0, 0)
                     + _frame(HEADERS, END_HEADERS | END_STREAM, stream, block)
                     + _frame(GOAWAY, 0, 0, stream.to_bytes(4, "big") + bytes(4)))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
            await asyncio.sleep(0.2)
