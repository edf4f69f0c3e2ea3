"""schemathesis hooks of scripts/contract-check: the EDI media types are text on the wire (the
document's examples of them are interchanges), sent as the bytes they are."""

import json

import schemathesis


@schemathesis.serializer("application/edi-x12", "application/edifact", "application/edi-consent")
def edi(ctx, value):
    if isinstance(value, bytes):
        return {"data": value}
    text = value if isinstance(value, str) else json.dumps(value)
    return {"data": text.encode("utf-8")}
