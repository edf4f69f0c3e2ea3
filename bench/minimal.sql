-- pgbench script: the minimal transaction an inbox needs for one first delivery of
-- tests/fixtures/x12/810-single.edi, on bench/minimal-schema.sql: claim the key (with its payload and
-- response, sizes as the service stores them), book the invoice (claiming its business key) and its two
-- lines, one commit, in one
-- statement (one round trip). No acknowledgement, no audit row, no documents: the floor that
-- edi-inbox's figures are compared with. Ids are time-ordered like UUIDv7; run with `-D k=0`.
\set k :k + 1
\set n :client_id * 1000000000 + :k
WITH claim AS (
    INSERT INTO inbox (id, source, message_id, fingerprint, payload, response_body, received_at)
    VALUES ((lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'i'), 1, 20))::uuid,
        'x12-ZZ-ACMESUPPLY', (:n)::text, md5((:n)::text) || md5((:n)::text),
        convert_to(repeat('x', 735), 'UTF8'), repeat('r', 1284), now())
    ON CONFLICT (source, message_id) DO NOTHING
    RETURNING id
), invoice AS (
    INSERT INTO invoices (id, inbox_id, number, issue_date, currency, total, business_key)
    SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'v'), 1, 20))::uuid,
        claim.id, 'INV-1042', '2026-03-17', 'USD', 8000.00,
        'x12-ZZ-ACMESUPPLY 92 ACME-001 invoice INV-' || (:n)::text || ' *'
    FROM claim
    RETURNING id
)
INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit_price, amount)
SELECT invoice.id, l.line_number, l.quantity, l.unit_price, l.amount
FROM invoice, (VALUES (1, 500, 12.50, 6250.00), (2, 200, 8.75, 1750.00)) AS l (line_number, quantity, unit_price, amount);
