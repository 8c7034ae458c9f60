"""SPDY/3.1 framing (``server.spdy``) and the kubelet's stream pairing (``server.portforward``),
without a server: frames built as moby/spdystream writes them (spdy/write.go), header blocks
compressed with one zlib stream per direction primed with SPDY/3's dictionary (spdy/types.go
``NewFramer``, spdy/dictionary.go)."""

from __future__ import annotations

import struct
import zlib

import pytest

from gpusched.server import spdy
from gpusched.server.portforward import ForwardTarget, PortForwardSession, metrics_response


class Client:
    """A SPDY client as spdystream is one: a zlib stream for the header blocks it sends, one
    for those it reads."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=spdy.DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)

    def block(self, headers: dict[str, str]) -> bytes:
        raw = spdy.encode_header_block({k: [v] for k, v in headers.items()})
        return self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_stream(self, stream_id: int, headers: dict[str, str], flags: int = 0) -> bytes:
        return spdy.client_frame(spdy.SYN_STREAM, struct.pack(">IIBB", stream_id, 0, 0, 0)
                                 + self.block(headers), flags)

    def frames(self, data: bytes) -> list[tuple[str, int, int, bytes]]:
        """(kind, stream id, flags, payload) of each frame in ``data``; SYN_REPLY blocks inflated."""
        out = []
        while data:
            first, flags_length = struct.unpack_from(">II", data)
            length = flags_length & 0xFFFFFF
            payload, data = data[8:8 + length], data[8 + length:]
            if first & 0x80000000:
                kind = first & 0xFFFF
                stream_id = struct.unpack_from(">I", payload)[0] & 0x7FFFFFFF
                if kind == spdy.SYN_REPLY:
                    payload = self.inflate.decompress(payload[4:])
                out.append(({2: "SYN_REPLY", 3: "RST", 6: "PING", 7: "GOAWAY"}[kind], stream_id,
                            flags_length >> 24, payload))
            else:
                out.append(("DATA", first, flags_length >> 24, payload))
        return out


def test_dictionary_is_spdy3s():
    """zlib names the dictionary by its Adler-32 in every header block's stream header (FDICT);
    spdystream's spdy/dictionary.go is 1,423 bytes with this checksum."""
    assert len(spdy.DICTIONARY) == 1423 and zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2


def headers(port: str = "9400", kind: str = "error", request: str | None = "0") -> dict[str, str]:
    h = {"streamtype": kind, "port": port}
    if request is not None:
        h["requestid"] = request
    return h


def target(metrics_port: int | None = 9400) -> ForwardTarget:
    return ForwardTarget("gpu-monitoring", "dcgm-x", "u-1", "gpu-node-1", True, metrics_port)


@pytest.mark.parametrize("frame,message", [
    (struct.pack(">HHI", 0x8002, 1, 0), "SPDY version 2"),
    (spdy.client_frame(5, b""), "unknown control frame type 5"),
    (spdy.client_frame(spdy.PING, struct.pack(">I", 0)), "invalid PING"),
    (spdy.client_frame(spdy.RST_STREAM, struct.pack(">II", 1, 0)), "invalid RST_STREAM"),
    (spdy.client_frame(spdy.SETTINGS, struct.pack(">I", 3) + b"\0" * 8), "where 28 were expected"),
    (spdy.client_frame(spdy.WINDOW_UPDATE, b"\0" * 4), "where 8 were expected"),
    (struct.pack(">HHI", 0x8003, 1, spdy.MAX_CONTROL_FRAME + 1), "frame of 65537 bytes"),
    (struct.pack(">II", 1, spdy.MAX_DATA_FRAME + 1), "frame of 1048577 bytes"),
    (spdy.data_frame(0, b"x"), "data frame on stream zero"),
    (spdy.client_frame(spdy.SYN_STREAM, struct.pack(">IIBB", 1, 0, 0, 0) + b"not zlib"),
     "header block does not inflate"),
], ids=["version-2", "unknown-type", "ping-zero", "rst-status-zero", "settings-short",
        "window-update-short", "control-too-large", "data-too-large", "data-stream-zero", "not-zlib"])
def test_malformed_frames_raise(frame, message):
    with pytest.raises(spdy.SpdyError, match=message):
        spdy.SpdySession().feed(frame)


@pytest.mark.parametrize("block,message", [
    (b"\0\0", "shorter than its count"),
    (struct.pack(">I", spdy.MAX_HEADERS + 1), "65 headers"),
    (struct.pack(">II", 1, 100) + b"port", "past the block"),
    (spdy.encode_header_block({"Port": ["1"]}), "not lower case"),
    (spdy.encode_header_block({"port": ["1"]}) + b"x", "bytes after"),
], ids=["short", "too-many", "length-past-end", "upper-case", "trailing-bytes"])
def test_malformed_header_blocks(block, message):
    client = Client()
    compressed = client.deflate.compress(block) + client.deflate.flush(zlib.Z_SYNC_FLUSH)
    frame = spdy.client_frame(spdy.SYN_STREAM, struct.pack(">IIBB", 1, 0, 0, 0) + compressed)
    with pytest.raises(spdy.SpdyError, match=message):
        spdy.SpdySession().feed(frame)


def test_compression_bomb_stops_at_the_bound():
    """64 MiB of one byte compresses to about 64 KiB; inflating stops at MAX_HEADER_BLOCK."""
    client = Client()
    bomb = client.deflate.compress(b"\0" * (64 << 20)) + client.deflate.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < spdy.MAX_CONTROL_FRAME
    frame = spdy.client_frame(spdy.SYN_STREAM, struct.pack(">IIBB", 1, 0, 0, 0) + bomb)
    with pytest.raises(spdy.SpdyError, match="inflates past 65536 bytes"):
        spdy.SpdySession().feed(frame)


def test_frames_split_anywhere_and_pings_echoed():
    client, session = Client(), spdy.SpdySession()
    wire = client.syn_stream(1, headers()) + spdy.client_frame(spdy.PING, struct.pack(">I", 7))
    events = [e for i in range(len(wire)) for e in session.feed(wire[i:i + 1])]
    assert events == [spdy.NewStream(1, {"streamtype": ["error"], "port": ["9400"], "requestid": ["0"]}, False)]
    assert client.frames(session.take_output()) == [("PING", 7, 0, struct.pack(">I", 7))]


def test_stream_ids_must_rise_and_open_streams_are_bounded():
    client, session = Client(), spdy.SpdySession(max_streams=1)
    session.feed(client.syn_stream(3, headers()))
    session.feed(client.syn_stream(1, headers()))           # lower than the last: PROTOCOL_ERROR
    session.feed(client.syn_stream(5, headers()))           # over the bound: REFUSED_STREAM
    assert [(k, s, struct.unpack(">II", p)[1]) for k, s, _f, p in client.frames(session.take_output())] \
        == [("RST", 1, spdy.PROTOCOL_ERROR), ("RST", 5, spdy.REFUSED_STREAM)]


def pair(session: PortForwardSession, client: Client, port: str = "9400", request: str | None = "0"):
    session.feed(client.syn_stream(1, headers(port, "error", request)))
    session.feed(client.syn_stream(3, headers(port, "data", request)))
    return client.frames(session.take_output())


@pytest.mark.parametrize("request_id", ["0", None], ids=["requestID", "no-requestID-paired-by-stream-id"])
def test_a_pair_on_the_metrics_port_is_one_http_request(request_id):
    """httpstream.go ``requestID``: an older client's streams pair as error n, data n+2."""
    client, session = Client(), PortForwardSession(target())
    assert pair(session, client, request=request_id) == [("SYN_REPLY", 1, 0, b"\0\0\0\0"),
                                                          ("SYN_REPLY", 3, 0, b"\0\0\0\0")]
    feedback = session.feed(spdy.data_frame(3, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
    [fetch] = feedback.fetches
    session.answer(fetch.request_id, metrics_response(fetch, b"DCGM_FI_DEV_GPU_UTIL 1\n"))
    frames = client.frames(session.take_output())
    assert frames[0][:3] == ("DATA", 1, spdy.FLAG_FIN) and frames[0][3] == b""       # error: empty
    body = b"".join(f[3] for f in frames[1:])
    assert body.startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4")
    assert body.endswith(b"\r\n\r\nDCGM_FI_DEV_GPU_UTIL 1\n") and frames[-1][2] == spdy.FLAG_FIN


@pytest.mark.parametrize("metrics_port,port,message", [
    (9400, "8080", "error forwarding port 8080 to pod dcgm-x_gpu-monitoring, uid u-1: gpusched: port "
                   "8080 of pod gpu-monitoring/dcgm-x is not simulated (only dcgm-exporter's metrics port 9400 is)"),
    (None, "9400", "port 9400 of pod gpu-monitoring/dcgm-x is not simulated (only a dcgm-exporter "
                   "pod's metrics port answers: gpusched runs no processes)"),
], ids=["exporter-other-port", "not-an-exporter"])
def test_other_ports_get_one_line_on_the_error_stream(metrics_port, port, message):
    client, session = Client(), PortForwardSession(target(metrics_port))
    frames = pair(session, client, port)
    assert frames[2][:3] == ("DATA", 1, spdy.FLAG_FIN) and message in frames[2][3].decode()
    assert frames[3][:3] == ("DATA", 3, spdy.FLAG_FIN) and frames[3][3] == b""


@pytest.mark.parametrize("stream_headers", [
    {"streamtype": "error"}, {"streamtype": "error", "port": "0"}, {"streamtype": "error", "port": "x"},
    {"streamtype": "stdin", "port": "9400"}, {"port": "9400"},
], ids=["no-port", "port-zero", "port-not-a-number", "bad-stream-type", "no-stream-type"])
def test_streams_without_valid_headers_are_reset(stream_headers):
    """httpstream.go ``httpStreamReceived``: the stream is rejected (spdystream resets it)."""
    client, session = Client(), PortForwardSession(target())
    session.feed(client.syn_stream(1, stream_headers))
    assert [(k, s) for k, s, _f, _p in client.frames(session.take_output())] == [("RST", 1)]


def test_a_second_stream_of_one_type_is_reset_and_an_incomplete_pair_times_out():
    client, session = Client(), PortForwardSession(target())
    session.feed(client.syn_stream(1, headers()))
    session.feed(client.syn_stream(3, headers()))             # "error stream already assigned"
    session.expire("0")
    frames = client.frames(session.take_output())
    assert [(k, s) for k, s, _f, _p in frames] == [("SYN_REPLY", 1), ("RST", 3), ("DATA", 1)]
    assert frames[2][3] == b"(request=0) timed out waiting for streams"


@pytest.mark.parametrize("request_bytes,status", [
    (b"hello\r\n\r\n", b"400 Bad Request"),
    (b"GET /other HTTP/1.1\r\n\r\n", b"404 Not Found"),
    (b"GET /" + b"x" * 70000, b"431 Request Header Fields Too Large"),
], ids=["not-http", "other-path", "head-too-large"])
def test_http_on_the_data_stream(request_bytes, status):
    client, session = Client(), PortForwardSession(target())
    pair(session, client)
    for fetch in session.feed(spdy.data_frame(3, request_bytes)).fetches:
        session.answer(fetch.request_id, metrics_response(fetch, None))
    body = b"".join(f[3] for f in client.frames(session.take_output()) if f[1] == 3)
    assert body.startswith(b"HTTP/1.1 " + status + b"\r\n")
