"""One HTTP/3 request with aioquic, the tests' second, independent HTTP/3 client (tests/src/aioquic.rs runs it).

Prints one JSON object: {"status": int, "headers": {name: value}, "body": text}, or {"error": text} (exit 2)
when the QUIC handshake or the request fails. The server certificate is checked against --ca, or not at all
with --insecure (to see whether a handshake is refused, whatever the certificate). A body of --body-bytes bytes is the pattern i % 251.
"""

import argparse
import asyncio
import json
import ssl
import sys

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

LIMIT_SECONDS = 20


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.replies = {}
        self.waiters = {}

    def quic_event_received(self, event):
        for h3_event in self.h3.handle_event(event):
            if not isinstance(h3_event, (HeadersReceived, DataReceived)):
                continue
            reply = self.replies.setdefault(h3_event.stream_id, {"headers": [], "body": b""})
            if isinstance(h3_event, HeadersReceived):
                reply["headers"].extend(h3_event.headers)
            else:
                reply["body"] += h3_event.data
            if h3_event.stream_ended:
                waiter = self.waiters.pop(h3_event.stream_id, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(reply)

    async def request(self, method, authority, path, body):
        stream_id = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
            (b"user-agent", b"aioquic"),
        ]
        waiter = asyncio.get_running_loop().create_future()
        self.waiters[stream_id] = waiter
        self.h3.send_headers(stream_id, headers, end_stream=not body)
        if body:
            self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit()
        return await asyncio.wait_for(waiter, LIMIT_SECONDS)


async def main(args):
    configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=args.sni)
    if args.insecure:
        configuration.verify_mode = ssl.CERT_NONE
    else:
        configuration.load_verify_locations(args.ca)
    body = bytes(i % 251 for i in range(args.body_bytes))
    async with connect(args.host, args.port, configuration=configuration, create_protocol=Client,
                       wait_connected=True) as client:
        reply = await client.request(args.method, args.authority, args.path, body)
    headers = {}
    status = 0
    for name, value in reply["headers"]:
        if name == b":status":
            status = int(value)
        else:
            headers[name.decode()] = value.decode()
    return {"status": status, "headers": headers, "body": reply["body"].decode("utf-8", "replace")}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sni", required=True)
    parser.add_argument("--authority", required=True)
    parser.add_argument("--path", default="/")
    parser.add_argument("--method", default="GET")
    parser.add_argument("--body-bytes", type=int, default=0)
    parser.add_argument("--ca")
    parser.add_argument("--insecure", action="store_true", help="accept any server certificate")
    arguments = parser.parse_args()
    try:
        result = asyncio.run(asyncio.wait_for(main(arguments), LIMIT_SECONDS))
    except Exception as error:  # the test reads the reason
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(2)
    print(json.dumps(result))
