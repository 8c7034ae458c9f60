"""SPDY/3.1 framing, server side, without I/O: what kubectl's port-forward speaks (plain or tunnelled).

kubectl's port-forward multiplexes its forwarded connections over one SPDY/3.1 session
(client-go uses moby/spdystream; apimachinery ``pkg/util/httpstream/spdy``). The bytes arrive
either on the socket after a ``101`` (``Upgrade: SPDY/3.1``) or inside WebSocket binary
messages (subprotocol ``SPDY/3.1+portforward.k8s.io``); :class:`SpdySession` does not care: it
is fed bytes (:meth:`SpdySession.feed`) and hands back what to send (:meth:`SpdySession.take_output`).

Frames (SPDY/3 draft, section 2; spdystream ``spdy/read.go`` and ``write.go``): an 8-byte header
whose first bit tells a control frame (version 15 bits, type 16 bits, flags 8, length 24) from a
data frame (stream id 31 bits, flags 8, length 24). Control frames handled: SYN_STREAM (a new
stream from the client: odd, increasing ids), SYN_REPLY (sent for each accepted stream, with an
empty header block, as apimachinery's ``newSpdyStream`` does), RST_STREAM, SETTINGS and
WINDOW_UPDATE (read and ignored: spdystream does no flow control either), PING (an odd id from
the client is echoed), GOAWAY (ends the session), HEADERS (decoded, ignored). Header blocks are
compressed with one zlib stream per direction for the whole session, primed with SPDY/3's
dictionary (:data:`DICTIONARY`; ``spdy/dictionary.go``), each block flushed with a sync flush.

Bounds (hostile input): a control frame of at most :data:`MAX_CONTROL_FRAME` bytes, a data frame
of at most :data:`MAX_DATA_FRAME`, a header block that inflates to at most
:data:`MAX_HEADER_BLOCK` bytes (zlib's ``max_length``, so a compression bomb stops there) with
at most :data:`MAX_HEADERS` names, and at most :data:`MAX_STREAMS` open streams (one more is
refused with RST_STREAM ``REFUSED_STREAM``). Anything malformed raises :class:`SpdyError`; the
caller closes the connection (what spdystream's ``Serve`` does on a read error).

Neighbours: ``server.portforward`` (the streams' meaning), ``server.portforward_io`` (transports).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
# RST_STREAM status codes (SPDY/3 2.6.3; spdystream spdy/types.go RstStreamStatus)
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL = 1, 2, 3, 5
MAX_CONTROL_FRAME = 64 * 1024
MAX_DATA_FRAME = 1024 * 1024
MAX_HEADER_BLOCK = 64 * 1024
MAX_HEADERS = 64
MAX_STREAMS = 256
DATA_CHUNK = 16 * 1024

# SPDY/3's header compression dictionary (draft 3, section 2.6.10.1): length-prefixed words, then
# a run of common values. 1,423 bytes; zlib names it by its Adler-32, 0xe3c6a7c2.
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language "
    "accept-ranges age allow authorization cache-control connection content-base content-encoding "
    "content-language content-length content-location content-md5 content-range content-type date "
    "etag expect expires from host if-match if-modified-since if-none-match if-range "
    "if-unmodified-since last-modified location max-forwards pragma proxy-authenticate "
    "proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status").split() + [
    "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_VALUES = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 "
    "Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, "
    "Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
    "application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch"
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _VALUES.encode()


class SpdyError(Exception):
    """A malformed frame or a broken bound: the session must be closed."""


@dataclass(frozen=True)
class NewStream:
    """A stream the client opened (SYN_STREAM): its id, headers (lower-case names; values joined
    by NUL in the frame, split here) and whether the client already half-closed it."""

    stream_id: int
    headers: dict[str, list[str]]
    fin: bool


@dataclass(frozen=True)
class StreamData:
    """Bytes on a stream; ``fin``: the client sends no more on it."""

    stream_id: int
    data: bytes
    fin: bool


@dataclass(frozen=True)
class StreamReset:
    stream_id: int


@dataclass(frozen=True)
class GoAway:
    """The client ends the session."""


Event = NewStream | StreamData | StreamReset | GoAway


@dataclass
class _Stream:
    remote_open: bool = True        # the client may still send
    local_open: bool = True         # we may still send


@dataclass
class SpdySession:
    """One SPDY/3.1 session, server side; see the module docstring."""

    max_streams: int = MAX_STREAMS
    _buffer: bytearray = field(default_factory=bytearray)
    _output: list[bytes] = field(default_factory=list)
    _streams: dict[int, _Stream] = field(default_factory=dict)
    _last_stream_id: int = 0
    _inflate: zlib._Decompress = field(default_factory=lambda: zlib.decompressobj(zdict=DICTIONARY))
    _deflate: zlib._Compress = field(
        default_factory=lambda: zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=DICTIONARY))
    closed: bool = False

    # ---- reading -----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Event]:
        """The events in ``data`` (and what was left of earlier feeds); SpdyError when malformed."""
        self._buffer += data
        events: list[Event] = []
        while len(self._buffer) >= 8 and not self.closed:
            first, flags_length = struct.unpack_from(">II", self._buffer)
            flags, length = flags_length >> 24, flags_length & 0xFFFFFF
            control = bool(first & 0x80000000)
            limit = MAX_CONTROL_FRAME if control else MAX_DATA_FRAME
            if length > limit:
                raise SpdyError(f"frame of {length} bytes (at most {limit})")
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            if control:
                events += self._control(first, flags, payload)
            else:
                events += self._data(first & 0x7FFFFFFF, flags, payload)
        return events

    def _control(self, first: int, flags: int, payload: bytes) -> list[Event]:
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise SpdyError(f"SPDY version {version} (only {VERSION})")
        if kind == SYN_STREAM:
            return self._syn_stream(flags, payload)
        if kind in (SYN_REPLY, HEADERS):       # a server never gets a SYN_REPLY; HEADERS: read, ignored
            self._header_block(_exactly(payload, 4, at_least=True)[4:])
            return []
        if kind == RST_STREAM:
            stream_id, status = struct.unpack(">II", _exactly(payload, 8))
            if status == 0 or stream_id & 0x7FFFFFFF == 0:
                raise SpdyError("invalid RST_STREAM")
            return self._reset(stream_id & 0x7FFFFFFF)
        if kind == SETTINGS:
            count = struct.unpack(">I", _exactly(payload, 4, at_least=True)[:4])[0]
            _exactly(payload, 4 + 8 * count)
            return []
        if kind == PING:
            ping_id = struct.unpack(">I", _exactly(payload, 4))[0]
            if ping_id == 0 or flags:
                raise SpdyError("invalid PING")
            if ping_id & 1:                    # the client's ping: echo it (ours would be even)
                self._output.append(_control_frame(PING, 0, payload))
            return []
        if kind in (GOAWAY, WINDOW_UPDATE):
            _exactly(payload, 8)
            if flags:
                raise SpdyError("invalid control frame flags")
            return [GoAway()] if kind == GOAWAY else []
        raise SpdyError(f"unknown control frame type {kind}")

    def _syn_stream(self, flags: int, payload: bytes) -> list[Event]:
        _exactly(payload, 10, at_least=True)
        stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
        headers = self._header_block(payload[10:])     # always inflated: the zlib stream is shared
        if stream_id == 0:
            raise SpdyError("stream id zero")
        if stream_id % 2 == 0 or stream_id <= self._last_stream_id:
            self._output.append(_rst_frame(stream_id, PROTOCOL_ERROR))   # spdystream checkStreamFrame
            return []
        self._last_stream_id = stream_id
        if len(self._streams) >= self.max_streams:
            self._output.append(_rst_frame(stream_id, REFUSED_STREAM))
            return []
        fin = bool(flags & FLAG_FIN)
        self._streams[stream_id] = _Stream(remote_open=not fin)
        return [NewStream(stream_id, headers, fin)]

    def _data(self, stream_id: int, flags: int, payload: bytes) -> list[Event]:
        if stream_id == 0:
            raise SpdyError("data frame on stream zero")
        stream = self._streams.get(stream_id)
        if stream is None or not stream.remote_open:
            return []                          # a stream already gone (spdystream drops it too)
        fin = bool(flags & FLAG_FIN)
        if fin:
            stream.remote_open = False
            self._forget_if_done(stream_id)
        return [StreamData(stream_id, payload, fin)]

    def _reset(self, stream_id: int) -> list[Event]:
        if self._streams.pop(stream_id, None) is None:
            return []
        return [StreamReset(stream_id)]

    def _header_block(self, compressed: bytes) -> dict[str, list[str]]:
        """Inflate (bounded) and parse one name/value block (spdystream ``parseHeaderValueBlock``)."""
        try:
            block = self._inflate.decompress(compressed, MAX_HEADER_BLOCK + 1)
        except zlib.error as err:
            raise SpdyError(f"header block does not inflate: {err}") from None
        if len(block) > MAX_HEADER_BLOCK or self._inflate.unconsumed_tail:
            raise SpdyError(f"header block inflates past {MAX_HEADER_BLOCK} bytes")
        return parse_header_block(block)

    # ---- writing -----------------------------------------------------------------------------

    def reply(self, stream_id: int) -> None:
        """Accept a stream: SYN_REPLY with an empty header block."""
        block = self._deflate.compress(struct.pack(">I", 0)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        self._output.append(_control_frame(SYN_REPLY, 0, struct.pack(">I", stream_id) + block))

    def refuse(self, stream_id: int, status: int = CANCEL) -> None:
        """RST_STREAM: the stream is gone for both sides."""
        if self._streams.pop(stream_id, None) is not None:
            self._output.append(_rst_frame(stream_id, status))

    def send(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        """Data on a stream we may still write to (in frames of at most :data:`DATA_CHUNK`)."""
        stream = self._streams.get(stream_id)
        if stream is None or not stream.local_open:
            return
        for start in range(0, len(data), DATA_CHUNK):
            last = fin and start + DATA_CHUNK >= len(data)
            self._output.append(_data_frame(stream_id, data[start:start + DATA_CHUNK], last))
        if fin:
            if not data:
                self._output.append(_data_frame(stream_id, b"", True))
            stream.local_open = False
            self._forget_if_done(stream_id)

    def go_away(self) -> None:
        self._output.append(_control_frame(GOAWAY, 0, struct.pack(">II", self._last_stream_id, 0)))
        self.closed = True

    def take_output(self) -> bytes:
        out = b"".join(self._output)
        self._output.clear()
        return out

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def _forget_if_done(self, stream_id: int) -> None:
        stream = self._streams.get(stream_id)
        if stream is not None and not stream.remote_open and not stream.local_open:
            del self._streams[stream_id]


def parse_header_block(block: bytes) -> dict[str, list[str]]:
    """A SPDY/3 name/value block: a 32-bit count, then length-prefixed names and values (values
    may hold several, NUL-separated). Names must be lower case and unique."""
    if len(block) < 4:
        raise SpdyError("header block shorter than its count")
    count, offset = struct.unpack_from(">I", block)[0], 4
    if count > MAX_HEADERS:
        raise SpdyError(f"{count} headers (at most {MAX_HEADERS})")
    headers: dict[str, list[str]] = {}
    for _ in range(count):
        name, offset = _string(block, offset)
        value, offset = _string(block, offset)
        if name != name.lower() or not name or name in headers:
            raise SpdyError(f"header name {name!r} not lower case, empty or repeated")
        headers[name] = value.split("\x00")
    if offset != len(block):
        raise SpdyError("bytes after the header block")
    return headers


def encode_header_block(headers: dict[str, list[str]]) -> bytes:
    """The uncompressed block for ``headers`` (what a client sends; tests build frames with it)."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        for text in (name, "\x00".join(values)):
            raw = text.encode()
            out.append(struct.pack(">I", len(raw)) + raw)
    return b"".join(out)


def _string(block: bytes, offset: int) -> tuple[str, int]:
    if offset + 4 > len(block):
        raise SpdyError("header block truncated")
    length = struct.unpack_from(">I", block, offset)[0]
    end = offset + 4 + length
    if end > len(block):
        raise SpdyError("header length past the block")
    try:
        return block[offset + 4:end].decode("utf-8"), end
    except UnicodeDecodeError:
        raise SpdyError("header not UTF-8") from None


def _exactly(payload: bytes, size: int, at_least: bool = False) -> bytes:
    if len(payload) < size or (not at_least and len(payload) != size):
        raise SpdyError(f"control frame of {len(payload)} bytes where {size} were expected")
    return payload


def _control_frame(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def _data_frame(stream_id: int, data: bytes, fin: bool) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


def _rst_frame(stream_id: int, status: int) -> bytes:
    return _control_frame(RST_STREAM, 0, struct.pack(">II", stream_id, status))


def client_frame(kind: int, payload: bytes, flags: int = 0) -> bytes:
    """A control frame as a client writes it (tests and the fuzz cases build frames with it)."""
    return _control_frame(kind, flags, payload)


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return _data_frame(stream_id, data, fin)
