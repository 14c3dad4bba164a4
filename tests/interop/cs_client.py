"""A ClientServer client in Python (pyzmq = libzmq, cbor2): admits itself to a zlink
server, sends one Echo request and prints the reply as JSON.

usage: cs_client.py ENDPOINT CHANNEL TEXT [SERVER_KEY CLIENT_PUBLIC CLIENT_SECRET]

With the three Z85 keys it runs ZMTP CURVE (libzmq's own implementation). When the server
never answers (a refused key, say) it exits with status 3 and "no answer" on stderr.
"""

import json
import os
import random
import sys

import cbor2
import zmq

from zlink_wire import (
    ACK, ADMIT, CHANNEL_REQUEST, HELLO, PROBE, REPLY, VERSION,
    call_head, command_of, control, parse_control, parse_reply,
)


def main():
    endpoint, channel, text = sys.argv[1:4]
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, int(os.environ.get("ZLINK_RECV_TIMEOUT_MS", "10000")))
    if len(sys.argv) >= 7:
        server_key, public, secret = (k.encode() for k in sys.argv[4:7])
        socket.curve_serverkey = server_key
        socket.curve_publickey = public
        socket.curve_secretkey = secret
    socket.connect(endpoint)
    try:
        run(socket, channel, text)
    except zmq.Again:
        print("no answer from the server", file=sys.stderr)
        sys.exit(3)


def run(socket, channel, text):
    admission = {
        "mesh": "cs:" + channel,
        "rid": "python-client",
        "gen": random.randint(1, 2**63 - 1),
        "rev": 1,
        "ver": VERSION,
        "ep": "",
        "chs": [],
    }
    socket.send_multipart([control(HELLO, {"ad": admission})])
    answer = socket.recv_multipart()[0]
    if command_of(answer) != ADMIT:
        sys.exit("expected admit, got command %d: %r" % (command_of(answer), parse_control(answer)))

    request = cbor2.dumps({"text": text})
    operation = random.randint(1, 2**64 - 1)
    head = call_head(
        CHANNEL_REQUEST, "Echo", operation, channel=channel, correlation=1, deadline_ms=5000
    )
    socket.send_multipart([head, request])
    while True:
        frames = socket.recv_multipart()
        command = command_of(frames[0])
        if command == PROBE:
            socket.send_multipart([control(ACK, {"pr": parse_control(frames[0])["pr"]})])
            continue
        if command != REPLY:
            continue
        correlation, echoed, kind, detail = parse_reply(frames[0])
        if correlation != 1:
            sys.exit("reply to another correlation: %d" % correlation)
        if echoed != operation:
            sys.exit("reply echoes operation %d, the request's is %d" % (echoed, operation))
        if kind is not None:
            sys.exit("error reply: kind %d, %s" % (kind, detail))
        print(json.dumps(cbor2.loads(frames[-1])))
        return


if __name__ == "__main__":
    main()
