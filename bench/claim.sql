-- pgbench script: what edi-inbox sends PostgreSQL for one first delivery of tests/fixtures/x12/810-single.edi
-- (the one statement of src/store/postgres.rs: claim + payload + documents + invoice + lines +
-- acknowledgement + audit row, its parameters written out), with a fresh key per transaction. Colons in
-- literals are written as chr(58): pgbench would read them as variables. Keys are sequential per client
-- and ids time-ordered (a millisecond prefix, like the service's UUIDv7), so the indexes see the same
-- insertion pattern as under the service. Run with `-D k=0`.
\set k :k + 1
\set n :client_id * 1000000000 + :k
WITH claim AS (
    INSERT INTO inbox (id, source, message_id, standard, sender_qualifier, sender_id, receiver_qualifier,
        receiver_id, control_number, payload_sha256, content_type, status, response_body,
        received_at, processed_at)
    VALUES ((lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'i'), 1, 20))::uuid, concat_ws(chr(58), 'x12', 'ZZ', 'ACMESUPPLY'), (:n)::text, 'x12', 'ZZ', 'ACMESUPPLY', 'ZZ', 'BUYERCO',
        (:n)::text, 'f2ef63ef6a6a4b993f17838228781b013b20a8b94f36fad0135f64f26072e2a3',
        'application/edi-x12', 'processed', repeat('r', 1284), now(), now())
    ON CONFLICT (source, message_id) DO NOTHING
    RETURNING id, received_at
), payloads_written AS (
    INSERT INTO payloads (inbox_id, received_at, body)
    SELECT claim.id, claim.received_at, convert_to(repeat('x', 735), 'UTF8') FROM claim
), documents_written AS (
    INSERT INTO documents (id, inbox_id, position, doc_type, control_number)
    SELECT d.id, claim.id, d.position, d.doc_type, d.control_number
    FROM claim, unnest(ARRAY[(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'd'), 1, 20))::uuid], '{3}'::int4[], '{810}'::text[], '{0001}'::text[])
        AS d (id, position, doc_type, control_number)
), invoices_written AS (
    INSERT INTO invoices (id, inbox_id, document_id, number, issue_date, purchase_order, currency,
        total, tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name,
        buyer_qualifier, buyer_id, allowances_charges, business_key)
    SELECT i.id, claim.id, i.document_id, i.number, i.issue_date::date, i.purchase_order, i.currency,
        i.total::numeric, i.tax_total::numeric, i.tax_rate::numeric, i.seller_name,
        i.seller_qualifier, i.seller_id, i.buyer_name, i.buyer_qualifier, i.buyer_id,
        i.allowances_charges::jsonb,
        concat_ws(' ', concat_ws(chr(58), 'x12', 'ZZ', 'ACMESUPPLY'), '92', 'ACME-001', 'invoice', 'INV-' || (:n)::text, '*')
    FROM claim, unnest(ARRAY[(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'v'), 1, 20))::uuid], ARRAY[(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'd'), 1, 20))::uuid], '{INV-1042}'::text[],
        '{2026-03-17}'::text[], '{PO-CB-1042}'::text[], '{USD}'::text[], '{8000.00}'::text[], '{NULL}'::text[],
        '{NULL}'::text[], '{"ACME SUPPLY CO"}'::text[], '{92}'::text[], '{ACME-001}'::text[],
        '{"BUYERCO RETAIL"}'::text[], '{92}'::text[], '{BUY-777}'::text[], '{"[]"}'::text[])
        AS i (id, document_id, number, issue_date, purchase_order, currency, total, tax_total,
            tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier,
            buyer_id, allowances_charges)
), lines_written AS (
    INSERT INTO invoice_lines (invoice_id, line_number, quantity, unit, unit_price, product_id,
        description, amount)
    SELECT l.invoice_id, l.line_number, l.quantity::numeric, l.unit, l.unit_price::numeric,
        l.product_id, l.description, l.amount::numeric
    FROM claim, unnest(ARRAY[(lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'v'), 1, 20))::uuid, (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'v'), 1, 20))::uuid], '{1,2}'::int4[], '{500,200}'::text[],
        '{EA,EA}'::text[], '{12.50,8.75}'::text[], '{WIDGET-A100,BOLT-M6X20}'::text[],
        '{"BLUE WIDGET","HEX BOLT M6X20"}'::text[], '{6250.00,1750.00}'::text[])
        AS l (invoice_id, line_number, quantity, unit, unit_price, product_id, description, amount)
), ack_written AS (
    INSERT INTO acks (inbox_id, control_number, body, created_at)
    SELECT claim.id, n.value,
        replace(repeat('a', 300) || '{ACK-CONTROL-NUMBER}', '{ACK-CONTROL-NUMBER}', lpad(n.value::text, 9, '0')), now()
    FROM claim, LATERAL (SELECT nextval('ack_control_numbers') AS value) AS n
    RETURNING control_number
), audit_written AS (
    INSERT INTO deliveries (id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
        remote_addr, user_agent, content_type, body_bytes, received_at)
    SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0') || substr(md5((:n)::text || 'a'), 1, 20))::uuid,
        claim.id, NULL, concat_ws(chr(58), 'x12', 'ZZ', 'ACMESUPPLY'), (:n)::text, 'recorded', 201,
        'c6a2f1e4-0000-4000-8000-000000000000', '127.0.0.1', NULL, 'application/edi-x12', 735, now()
    FROM claim
)
SELECT id, true AS fresh, 'processed' AS status, NULL AS payload_sha256, NULL::text AS response_body,
    (SELECT control_number FROM ack_written) AS ack_control_number
FROM claim;
