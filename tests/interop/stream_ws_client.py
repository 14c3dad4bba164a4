"""A STREAM client over WebSocket (the `websockets` package): one packet per binary message.

usage: stream_ws_client.py HOST:PORT ROUNDS
"""

import json
import sys

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from stream_wire import Conversation, split


def main():
    address, rounds = sys.argv[1], int(sys.argv[2])
    with connect("ws://%s/" % address, open_timeout=10, close_timeout=2) as ws:

        def receive():
            while True:
                try:
                    message = ws.recv(timeout=10)
                except ConnectionClosed:
                    return None
                if isinstance(message, bytes):
                    return split(message)
                raise RuntimeError("a text message from the server: %r" % message)

        summary = Conversation(ws.send, receive).run(rounds)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
