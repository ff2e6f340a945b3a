# Calls one unary method through Python grpcio (gRPC C core) with a chosen :authority, the way grpcio >= 1.57,
# grpc-java and grpc-go < 1.58 send a unix socket's path. Raw bytes in and out, no generated code.
# Usage: authority_peer.py SOCKET METHOD_PATH AUTHORITY; prints JSON {"code": ..., "reply": base64}.
import base64
import json
import sys

import grpc

sock, method, authority = sys.argv[1], sys.argv[2], sys.argv[3]
ident = lambda b: b
with grpc.insecure_channel(f"unix:{sock}", options=[("grpc.default_authority", authority)]) as ch:
    try:
        reply = ch.unary_unary(method, request_serializer=ident, response_deserializer=ident)(b"", timeout=10)
        print(json.dumps({"code": "OK", "reply": base64.b64encode(reply).decode()}))
    except grpc.RpcError as e:
        print(json.dumps({"code": e.code().name, "details": e.details()}))
