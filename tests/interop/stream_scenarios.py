"""The interop scenarios, on the repository's Python STREAM client (clients/python).

usage: stream_scenarios.py URL ROUNDS
       stream_scenarios.py URL bound PLAYER

Prints what it saw as JSON; any broken expectation raises (a non-zero exit).
"""

import asyncio
import json
import os
import select
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

from zlink_stream import StreamClient, ZlinkError  # noqa: E402


async def echo_and_notes(url, rounds):
    """`rounds` numbered requests and one-ways, interleaved: every request answered once,
    by the session in order (its count), every push in order; an unknown packet is
    NotFound; the client's close ends the session with ClientClose."""
    client = StreamClient(url, reconnect=False)
    pushes, closes = [], []
    client.on_packet("note", lambda value, _packet: pushes.append(value["text"]))
    client.on("close", closes.append)
    await client.connect()
    requests = []
    for i in range(1, rounds + 1):
        requests.append(asyncio.ensure_future(client.request("echo", {"text": "r%d" % i})))
        await asyncio.sleep(0)  # The request is written before the next one-way.
        await client.send("note", {"text": "n%d" % i})
    answers = await asyncio.gather(*requests)
    for i, body in enumerate(answers, start=1):
        if body != {"text": "r%d" % i, "count": i}:
            raise RuntimeError("answer %d out of order or wrong: %r" % (i, body))
    await until(lambda: len(pushes) == rounds, "every push")
    if pushes != ["heard n%d" % i for i in range(1, rounds + 1)]:
        raise RuntimeError("pushes out of order: %r" % pushes[:10])
    try:
        await client.request("nobody", {})
        raise RuntimeError("the unknown packet was answered")
    except ZlinkError as e:
        if e.kind != "NotFound":
            raise RuntimeError("the unknown packet got %s" % e.kind) from e
    await client.close()
    if [c["reason_name"] for c in closes] != ["ClientClose"]:
        raise RuntimeError("closed with %r" % closes)
    return {"answers": len(answers), "pushes": len(pushes)}


def stdin_says_done():
    """Whether the driving test wrote a line on stdin (it does once its moves are done)."""
    readable, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(readable) and sys.stdin.readline() != ""


async def bound(url, player, batch=8, after_done=5):
    """Join a player Actor on another node, then numbered requests ("ask") and one-ways
    ("tick") in batches until the test says its moves are done, and a few batches more.
    The Actor must take each request once and in order, each one-way must come back as
    exactly one push in order, answers come in the order sent, and the session never
    closes. Returns the owners in the order they answered."""
    client = StreamClient(url, reconnect=False)
    ticks, closes, order = [], [], []
    client.on_packet("ticked", lambda value, _packet: ticks.append(value))
    client.on("close", closes.append)
    await client.connect()
    owners = [(await client.request("join", {"player": player}))["owner"]]
    asked, left = 0, None
    while left is None or left > 0:
        if left is None and stdin_says_done():
            left = after_done
        if left is not None:
            left -= 1
        first = asked + 1

        async def ask(n):
            body = await client.request("ask", {"n": n})
            order.append(n)
            return body

        requests = []
        for n in range(first, first + batch):
            requests.append(asyncio.ensure_future(ask(n)))
            await asyncio.sleep(0)
            await client.send("tick", {"n": n})
        for n, body in zip(range(first, first + batch), await asyncio.gather(*requests)):
            if body["n"] != n or body["asked"] != n:
                raise RuntimeError("request %d counted wrong: %r" % (n, body))
            if body["by"] != owners[-1]:
                owners.append(body["by"])
        asked = first + batch - 1
        await until(lambda: len(ticks) >= asked, "the batch's pushes")
        for i, tick in enumerate(ticks, start=1):
            if tick["n"] != i or tick["heard"] != i:
                raise RuntimeError("push %d out of order or counted wrong: %r" % (i, tick))
        if closes:
            raise RuntimeError("the session closed: %r" % closes)
    if order != sorted(order):
        raise RuntimeError("answers came out of order: %r" % order)
    await client.close()
    return {"asked": asked, "ticked": len(ticks), "owners": owners}


async def until(condition, what, seconds=10.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        if loop.time() > deadline:
            raise RuntimeError("not within %s s: %s" % (seconds, what))
        await asyncio.sleep(0.005)


def main(scheme):
    url = "%s://%s" % (scheme, sys.argv[1])
    if scheme == "ws":
        url += "/"
    if sys.argv[2] == "bound":
        summary = asyncio.run(bound(url, sys.argv[3]))
    else:
        summary = asyncio.run(echo_and_notes(url, int(sys.argv[2])))
    print(json.dumps(summary))
