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

from zlink_wire import ACK, ADMIT, CHANNEL_REQUEST, HELLO, PROBE, REPLY, head, parse_head


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
        "ver": 1,
        "ep": "",
        "chs": [],
    }
    socket.send_multipart([head(HELLO, {"ad": admission})])
    command, _, header = parse_head(socket.recv_multipart()[0])
    if command != ADMIT:
        sys.exit("expected admit, got command %d: %r" % (command, header))

    request = cbor2.dumps({"text": text})
    socket.send_multipart([head(CHANNEL_REQUEST, {"c": 1, "ch": channel, "p": "Echo", "dl": 5000}), request])
    while True:
        frames = socket.recv_multipart()
        command, _, header = parse_head(frames[0])
        if command == PROBE:
            socket.send_multipart([head(ACK, {"pr": header["pr"]})])
            continue
        if command != REPLY:
            continue
        if header.get("c") != 1:
            sys.exit("reply to another correlation: %r" % header)
        status = header.get("st", {})
        if "k" in status:
            sys.exit("error reply: kind %d, %s" % (status["k"], status.get("m", "")))
        print(json.dumps(cbor2.loads(frames[-1])))
        return


if __name__ == "__main__":
    main()
