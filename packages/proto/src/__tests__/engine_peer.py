# Drives a gRPC server engine from Python grpcio (gRPC C core) with raw-bytes methods: no generated code.
# Usage: engine_peer.py SOCKET; prints a JSON report of what the server answered.
import base64
import json
import sys

import grpc

sock = sys.argv[1]
ident = lambda b: b
report = {}
with grpc.insecure_channel(f"unix://{sock}") as ch:
    svc = "/runtime.v1.RuntimeService/"
    # VersionRequest{version: "py"}: field 1, length 2
    reply = ch.unary_unary(svc + "Version", request_serializer=ident, response_deserializer=ident)(
        b"\x0a\x02py", timeout=10
    )
    report["version"] = base64.b64encode(reply).decode()
    try:
        ch.unary_unary(svc + "RunPodSandbox", request_serializer=ident, response_deserializer=ident)(b"", timeout=10)
        report["error"] = "no error"
    except grpc.RpcError as e:
        md = dict(e.trailing_metadata() or ())
        report["error"] = {"code": e.code().name, "details": e.details(), "reason": md.get("x-kemu-reason")}
    try:
        ch.unary_unary(svc + "NoSuchMethod", request_serializer=ident, response_deserializer=ident)(b"", timeout=10)
        report["unimplemented"] = "OK"
    except grpc.RpcError as e:
        report["unimplemented"] = e.code().name
    try:
        ch.unary_unary(svc + "StopPodSandbox", request_serializer=ident, response_deserializer=ident)(b"", timeout=0.2)
        report["deadline"] = "OK"
    except grpc.RpcError as e:
        report["deadline"] = e.code().name
    items = ch.unary_stream(svc + "GetContainerEvents", request_serializer=ident, response_deserializer=ident)(
        b"", timeout=10
    )
    report["stream"] = sum(1 for _ in items)
print(json.dumps(report))
