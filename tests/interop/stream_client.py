"""A STREAM client on a plain socket (socket + json), written from the book's wire chapter.

usage: stream_client.py HOST:PORT ROUNDS
       stream_client.py HOST:PORT bound PLAYER

Runs the scenario of stream_wire.Conversation (or, with `bound`, of
stream_wire.BoundConversation) and prints its summary as JSON.
"""

import json
import socket
import struct
import sys

from stream_wire import BoundConversation, Conversation


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)

    def receive():
        prefix = read_exact(sock, 6)
        if prefix is None:
            return None
        header_len, payload_len = struct.unpack(">HI", prefix)
        header = read_exact(sock, header_len)
        payload = read_exact(sock, payload_len) if payload_len else b""
        if header is None or payload is None:
            return None
        return header, payload

    summary = scenario(sock.sendall, receive)
    print(json.dumps(summary))


def scenario(send, receive):
    if sys.argv[2] == "bound":
        return BoundConversation(send, receive).run_bound(sys.argv[3])
    return Conversation(send, receive).run(int(sys.argv[2]))


if __name__ == "__main__":
    main()
