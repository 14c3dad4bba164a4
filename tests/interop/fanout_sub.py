"""A fanout subscriber in Python (pyzmq = libzmq, cbor2): subscribes to one topic of a
zlink publisher and prints the first COUNT events as JSON lines.

usage: fanout_sub.py ENDPOINT TOPIC COUNT [SERVER_KEY CLIENT_PUBLIC CLIENT_SECRET]

With the three Z85 keys the SUB runs ZMTP CURVE (libzmq's own implementation).
"""

import json
import sys

import cbor2
import zmq

from zlink_wire import BEACON_TOPIC, FANOUT_EVENT, FLAG_METADATA, command_of, parse_call


def main():
    endpoint, topic, count = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    context = zmq.Context()
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.RCVTIMEO, 10000)
    socket.setsockopt(zmq.SUBSCRIBE, topic)
    if len(sys.argv) >= 7:
        server_key, public, secret = (k.encode() for k in sys.argv[4:7])
        socket.curve_serverkey = server_key
        socket.curve_publickey = public
        socket.curve_secretkey = secret
    socket.connect(endpoint)
    seen = 0
    while seen < count:
        frames = socket.recv_multipart()
        if frames[0] == BEACON_TOPIC:
            continue
        command = command_of(frames[1])
        if command != FANOUT_EVENT:
            sys.exit("not a fanout event: %d" % command)
        flags, _, operation, _, _, packet = parse_call(frames[1])
        if operation == 0:
            sys.exit("a fanout event without its operation identity")
        metadata = cbor2.loads(frames[2]) if flags & FLAG_METADATA else {}
        event = {
            "topic": frames[0].decode(),
            "packet": packet,
            "metadata": metadata,
            "payload": cbor2.loads(frames[-1]),
        }
        print(json.dumps(event), flush=True)
        seen += 1


if __name__ == "__main__":
    main()
