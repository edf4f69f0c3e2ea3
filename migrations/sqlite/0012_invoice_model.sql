-- no-transaction
-- Book what the invoice says (issue 30): the document's kind (a credit note is never an invoice),
-- every party by role, the tax breakdown per rate, the payment terms, the totals as stated; each line's price kind and basis, every product id
-- and its own allowances and charges. The currency is NULL when the document names none (no longer
-- a guessed USD). Invoices booked before keep what they had: their tax is one entry of the
-- breakdown, their product id the one product id of the line.
--
-- SQLite cannot drop a NOT NULL: `invoices` is rebuilt as SQLite's ALTER TABLE documentation says,
-- with foreign keys off (outside a transaction: the pragma is ignored inside one) so that dropping
-- the old table deletes no line, outbox message or export entry.
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE invoices_rebuilt (
    id                 BLOB PRIMARY KEY,
    inbox_id           BLOB NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
    document_id        BLOB NOT NULL UNIQUE REFERENCES documents (id) ON DELETE CASCADE,
    number             TEXT NOT NULL,
    issue_date         TEXT NOT NULL,
    purchase_order     TEXT,
    currency           TEXT,
    total              TEXT NOT NULL,
    tax_total          TEXT,
    tax_rate           TEXT,
    seller_name        TEXT,
    seller_qualifier   TEXT,
    seller_id          TEXT,
    buyer_name         TEXT,
    buyer_qualifier    TEXT,
    buyer_id           TEXT,
    allowances_charges TEXT NOT NULL DEFAULT '[]',
    kind               TEXT NOT NULL DEFAULT 'invoice'
        CHECK (kind IN ('invoice', 'credit_note', 'debit_note', 'corrected_invoice')),
    taxes              TEXT NOT NULL DEFAULT '[]',
    payment_terms      TEXT NOT NULL DEFAULT '[]',
    stated_totals      TEXT NOT NULL DEFAULT '[]',
    invoicee_name      TEXT,
    invoicee_qualifier TEXT,
    invoicee_id        TEXT,
    payee_name         TEXT,
    payee_qualifier    TEXT,
    payee_id           TEXT,
    ship_to_name       TEXT,
    ship_to_qualifier  TEXT,
    ship_to_id         TEXT
);
INSERT INTO invoices_rebuilt (id, inbox_id, document_id, number, issue_date, purchase_order, currency,
    total, tax_total, tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier,
    buyer_id, allowances_charges, taxes)
SELECT id, inbox_id, document_id, number, issue_date, purchase_order, currency, total, tax_total,
    tax_rate, seller_name, seller_qualifier, seller_id, buyer_name, buyer_qualifier, buyer_id,
    allowances_charges,
    CASE WHEN tax_total IS NOT NULL OR tax_rate IS NOT NULL
        THEN json_array(json_object('rate', tax_rate, 'amount', tax_total)) ELSE '[]' END
FROM invoices;
DROP TABLE invoices;
ALTER TABLE invoices_rebuilt RENAME TO invoices;
CREATE INDEX invoices_inbox_id ON invoices (inbox_id);
CREATE INDEX invoices_number ON invoices (number, id);

ALTER TABLE invoice_lines ADD COLUMN price_kind TEXT
    CHECK (price_kind IN ('net', 'invoice', 'calculation', 'gross'));
ALTER TABLE invoice_lines ADD COLUMN price_basis TEXT;
ALTER TABLE invoice_lines ADD COLUMN product_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE invoice_lines ADD COLUMN allowances_charges TEXT NOT NULL DEFAULT '[]';
UPDATE invoice_lines SET product_ids = json_array(json_object('qualifier', NULL, 'id', product_id))
WHERE product_id IS NOT NULL;
-- A partner's invoices whose figures do not reconcile: booked with a warning, or refused (422).
ALTER TABLE partners ADD COLUMN on_mismatch TEXT NOT NULL DEFAULT 'warn' CHECK (on_mismatch IN ('warn', 'reject'));
COMMIT;
PRAGMA foreign_keys = ON;
