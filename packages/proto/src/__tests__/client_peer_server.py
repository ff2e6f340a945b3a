# A gRPC server from Python grpcio (gRPC C core), an implementation independent of ours, for the client
# tests. Raw-bytes methods of service kemu.test.Peer, no generated code:
#   Echo  answers the request bytes; echoes x-kemu-* request metadata as headers and as trailers
#   Fail  request is JSON {"code": n, "details": s}: aborts with that status and trailers
#         x-kemu-reason and x-kemu-blob-bin
#   Hang  never answers (ends when the client cancels or the deadline passes)
#   Big   request is a decimal n: answers n bytes
# Usage: client_peer_server.py SOCKET; prints "ready" once serving.
import json
import sys
import threading
from concurrent import futures

import grpc

CODES = {c.value[0]: c for c in grpc.StatusCode}


def echo(request, context):
    md = [(k, v) for k, v in context.invocation_metadata() if k.startswith("x-kemu-")]
    context.send_initial_metadata(md)
    context.set_trailing_metadata(md)
    return request


def fail(request, context):
    spec = json.loads(request.decode())
    context.set_trailing_metadata((("x-kemu-reason", "why"), ("x-kemu-blob-bin", b"\x00\xff\x01")))
    context.abort(CODES[spec["code"]], spec["details"])


def hang(request, context):
    done = threading.Event()
    context.add_callback(done.set)
    done.wait(30)
    return b""


def big(request, context):
    return b"x" * int(request.decode())


handlers = {
    "Echo": grpc.unary_unary_rpc_method_handler(echo),
    "Fail": grpc.unary_unary_rpc_method_handler(fail),
    "Hang": grpc.unary_unary_rpc_method_handler(hang),
    "Big": grpc.unary_unary_rpc_method_handler(big),
}
server = grpc.server(
    futures.ThreadPoolExecutor(max_workers=8),
    options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
)
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("kemu.test.Peer", handlers),))
server.add_insecure_port(f"unix://{sys.argv[1]}")
server.start()
print("ready", flush=True)
server.wait_for_termination()
