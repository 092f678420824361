# SPDX-License-Identifier: Apache-2.0
"""The OpenAPI v2 document of the stand-in API server, as JSON and as protobuf.

This module owns /openapi/v2.  kubectl up to 1.2x asks for it in protobuf only
(`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and, when refused,
tries /swagger-2.0.0.pb-v1 and then gives up with "the server could not find the requested
resource", so the stand-in must answer in protobuf as a real kube-apiserver does.

The message is gnostic's `openapi.v2.Document` (github.com/google/gnostic, openapiv2/
OpenAPIv2.proto).  The stand-in's document names no paths and no definitions (the same content
as its JSON form): kubectl then finds no schema for any kind and skips client-side validation,
leaving it to the server, which validates against the CRD schemas.  Only five fields are
needed, so they are encoded by hand here rather than by generating Python classes from a
.proto file that Debian does not ship:

    Document:  1 swagger (string), 2 info (Info), 8 paths (Paths), 9 definitions (Definitions)
    Info:      1 title (string), 2 version (string)
    Paths, Definitions: empty messages (their repeated fields have no elements)
"""

PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# What the server answers with: kube-openapi's "returned content type", without the "@" that
# Go's mime.ParseMediaType (used by client-go on every response) refuses.
PROTOBUF_RETURNED_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _varint(n):
    """The base-128 varint encoding of the non-negative integer n."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number, payload):
    """A length-delimited field (wire type 2): a string, bytes or an embedded message."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def document(title, version):
    """The document as a dict, for the JSON form."""
    return {"swagger": "2.0", "info": {"title": title, "version": version},
            "paths": {}, "definitions": {}}


def document_protobuf(title, version):
    """The same document as serialised `openapi.v2.Document` bytes."""
    info = _field(1, title.encode()) + _field(2, version.encode())
    return (_field(1, b"2.0") + _field(2, info) + _field(8, b"") + _field(9, b""))


def wants_protobuf(accept):
    """True when the Accept header value prefers the protobuf form over JSON.

    kubectl sends the protobuf type alone; a client listing JSON first (or only) gets JSON.
    """
    for part in (accept or "").split(","):
        t = part.split(";")[0].strip().lower()
        if t == PROTOBUF_TYPE.lower():
            return True
        if t in ("application/json", "application/*", "*/*"):
            return False
    return False
