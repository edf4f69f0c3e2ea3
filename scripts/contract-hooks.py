"""schemathesis hooks of scripts/contract-check: the EDI media types are text on the wire (the
document's examples of them are interchanges), sent as the bytes they are, as text/plain is."""

import schemathesis

schemathesis.serializer.alias(["application/edi-x12", "application/edifact", "application/edi-consent"], "text/plain")
