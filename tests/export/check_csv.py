#!/usr/bin/env python3
"""Reads accounting export directories back with Python's csv module and checks them against the
invoices API's JSON (a file holding the list of every invoice): each booked invoice (not a duplicate) in exactly one file
of all the directories,
one record per line (one for an invoice without lines), every field equal to the API's value, and
the manifest listing each file with its counts and SHA-256. Prints a summary; exits 1 on the
first difference."""

import csv
import decimal
import hashlib
import json
import pathlib
import sys


COLUMNS = [
    "invoice_id", "interchange_id", "invoice_number", "document_kind", "issue_date", "purchase_order",
    "currency", "invoice_total", "tax_total", "tax_rate", "seller_qualifier", "seller_id", "seller_name",
    "buyer_qualifier", "buyer_id", "buyer_name", "invoicee_qualifier", "invoicee_id", "invoicee_name",
    "payee_qualifier", "payee_id", "payee_name", "ship_to_qualifier", "ship_to_id", "ship_to_name",
    "line_number", "product_id", "description", "quantity", "unit", "unit_price", "price_kind",
    "price_basis", "line_amount",
]


def fail(message):
    print(f"check_csv: {message}", file=sys.stderr)
    sys.exit(1)


def text(value):
    return "" if value is None else str(value)


def cell(value):
    """The field as docs/operators/accounting.md documents it: a `'` before text a spreadsheet would run as a formula."""
    if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        try:
            decimal.Decimal(value)
        except decimal.InvalidOperation:
            return "'" + value
    return value


def party(invoice, name):
    p = invoice.get(name) or {}
    return [text(p.get("qualifier")), text(p.get("id")), text(p.get("name"))]


def expected_records(invoice):
    head = [
        invoice["id"], invoice["interchange_id"], invoice["number"], invoice["kind"], invoice["issue_date"],
        text(invoice.get("purchase_order")), text(invoice.get("currency")), invoice["total"],
        text(invoice.get("tax_total")), text(invoice.get("tax_rate")),
        *party(invoice, "seller"), *party(invoice, "buyer"), *party(invoice, "invoicee"),
        *party(invoice, "payee"), *party(invoice, "ship_to"),
    ]
    lines = invoice.get("lines") or []
    if not lines:
        return [[cell(v) for v in head + [""] * 9]]
    return [
        [cell(v) for v in head + [str(l["number"]), text(l.get("product_id")), text(l.get("description")),
                                  l["quantity"], text(l.get("unit")), text(l.get("unit_price")),
                                  text(l.get("price_kind")), text(l.get("price_basis")), l["amount"]]]
        for l in lines
    ]


def main(invoices_json, *directories):
    listed = json.loads(pathlib.Path(invoices_json).read_text())
    # A duplicate (the same invoice arrived again) is listed by the API but never exported.
    invoices = {i["id"]: i for i in listed if i.get("duplicate_of") is None}
    seen = {}
    files = 0
    for directory in directories:
        files += check_directory(pathlib.Path(directory), invoices, seen)
    missing = sorted(set(invoices) - set(seen))
    if missing:
        fail(f"not exported: {missing}")
    print(json.dumps({"files": files, "invoices": len(seen)}))


def check_directory(directory, invoices, seen):
    leftovers = [p.name for p in directory.iterdir() if p.name.startswith(".edi-inbox.") and p.name.endswith(".tmp")]
    if leftovers:
        fail(f"temporary files left behind: {leftovers}")
    if not (directory / "manifest.json").exists():
        return 0
    manifest = {e["file_name"]: e for e in json.loads((directory / "manifest.json").read_text())}
    files = sorted(p for p in directory.glob("invoices-*.csv"))
    if sorted(manifest) != [p.name for p in files]:
        fail(f"manifest lists {sorted(manifest)}, directory has {[p.name for p in files]}")
    for path in files:
        raw = path.read_bytes()
        entry = manifest[path.name]
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            fail(f"{path.name}: SHA-256 differs from the manifest")
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        header, records = rows[0], rows[1:]
        if header != COLUMNS:
            fail(f"{path.name}: header {header}")
        if len(records) != entry["lines"]:
            fail(f"{path.name}: {len(records)} records, manifest says {entry['lines']}")
        by_invoice = {}
        for record in records:
            if len(record) != len(header):
                fail(f"{path.name}: a record with {len(record)} fields, header has {len(header)}")
            by_invoice.setdefault(record[0], []).append(record)
        if len(by_invoice) != entry["invoices"]:
            fail(f"{path.name}: {len(by_invoice)} invoices, manifest says {entry['invoices']}")
        for invoice_id, got in by_invoice.items():
            if invoice_id in seen:
                fail(f"invoice {invoice_id} is in {seen[invoice_id]} and {path.name}")
            seen[invoice_id] = f"{directory}/{path.name}"
            if invoice_id not in invoices:
                fail(f"{path.name}: invoice {invoice_id} is not in the API")
            want = expected_records(invoices[invoice_id])
            if got != want:
                fail(f"{path.name}: invoice {invoice_id}\n got  {got}\n want {want}")
    return len(files)


if __name__ == "__main__":
    main(*sys.argv[1:])
