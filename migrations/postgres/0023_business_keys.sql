-- One invoice, booked once (issue 51). Besides its interchange's key (sender + control number),
-- every booked document has a business key: its sender, the seller the document states (qualifier
-- and id), its kind, its number (surrounding spaces trimmed) and, for partners whose sellers number
-- per year, its issue year. Each part has `%` and space written as `%25` and `%20`, and the parts
-- are joined by spaces (`x12:ZZ:ACME ZZ SELLER1 invoice INV-1042 *`). A live key is claimed by
-- the unique index below, in the transaction that claims the interchange's key:
--   * `duplicate_of`: the same invoice arrived again (under another control number, through another
--     door): kept as a row of its interchange, never booked (no outbox message, not exported),
--     outside the index;
--   * `revision`: a number booked again with other content, as a new invoice or as the
--     replacement (`replaces`) of the earlier one, by an operator or a partner's `book` policy.
-- Invoices booked before keep their sender's key without a year; where two already share one, the
-- earliest stays the booked one and the later are marked as its duplicates (nothing is deleted).
ALTER TABLE invoices
    ADD COLUMN business_key text,
    ADD COLUMN revision integer NOT NULL DEFAULT 0,
    ADD COLUMN duplicate_of uuid,
    ADD COLUMN replaces uuid;

UPDATE invoices i
SET business_key = concat_ws(' ',
    replace(replace(x.source, '%', '%25'), ' ', '%20'),
    replace(replace(coalesce(i.seller_qualifier, ''), '%', '%25'), ' ', '%20'),
    replace(replace(coalesce(i.seller_id, ''), '%', '%25'), ' ', '%20'),
    i.kind,
    replace(replace(btrim(i.number), '%', '%25'), ' ', '%20'),
    '*')
FROM inbox x
WHERE x.id = i.inbox_id;

UPDATE invoices i
SET duplicate_of = first.id
FROM (SELECT DISTINCT ON (business_key) business_key, id FROM invoices ORDER BY business_key, id) AS first
WHERE first.business_key = i.business_key AND first.id <> i.id;

ALTER TABLE invoices ALTER COLUMN business_key SET NOT NULL;
CREATE UNIQUE INDEX invoices_business_key ON invoices (business_key, revision) WHERE duplicate_of IS NULL;
CREATE INDEX invoices_duplicate_of ON invoices (duplicate_of) WHERE duplicate_of IS NOT NULL;

-- What a partner's re-used invoice number with other content means, and whether its sellers'
-- numbers restart every year (the issue year is then part of the key).
ALTER TABLE partners
    ADD COLUMN on_duplicate_number text NOT NULL DEFAULT 'quarantine'
        CHECK (on_duplicate_number IN ('quarantine', 'reject', 'book')),
    ADD COLUMN invoice_numbers text NOT NULL DEFAULT 'unique'
        CHECK (invoice_numbers IN ('unique', 'per-year'));

ALTER TABLE quarantine DROP CONSTRAINT quarantine_reason_check;
ALTER TABLE quarantine ADD CONSTRAINT quarantine_reason_check
    CHECK (reason IN ('conflict', 'invalid', 'mismatch', 'duplicate-number'));
