"""A STREAM client over WebSocket (the `websockets` package): one packet per binary message.

usage: stream_ws_client.py HOST:PORT ROUNDS
       stream_ws_client.py HOST:PORT bound PLAYER
"""

import json
import sys

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from stream_wire import BoundConversation, Conversation, split


def main():
    address = sys.argv[1]
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

        summary = scenario(ws.send, receive)
    print(json.dumps(summary))


def scenario(send, receive):
    if sys.argv[2] == "bound":
        return BoundConversation(send, receive).run_bound(sys.argv[3])
    return Conversation(send, receive).run(int(sys.argv[2]))


if __name__ == "__main__":
    main()
