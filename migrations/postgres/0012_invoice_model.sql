-- Book what the invoice says (issue 30): the document's kind (a credit note is never an invoice),
-- every party by role, the tax breakdown per rate, the payment terms, the totals as stated; each line's price kind and basis, every product id
-- and its own allowances and charges. The currency is NULL when the document names none (no longer
-- a guessed USD). Invoices booked before keep what they had: their tax is one entry of the
-- breakdown, their product id the one product id of the line.
ALTER TABLE invoices
    ALTER COLUMN currency DROP NOT NULL,
    ADD COLUMN kind text NOT NULL DEFAULT 'invoice'
        CHECK (kind IN ('invoice', 'credit_note', 'debit_note', 'corrected_invoice')),
    ADD COLUMN taxes jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN payment_terms jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN stated_totals jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN invoicee_name text,
    ADD COLUMN invoicee_qualifier text,
    ADD COLUMN invoicee_id text,
    ADD COLUMN payee_name text,
    ADD COLUMN payee_qualifier text,
    ADD COLUMN payee_id text,
    ADD COLUMN ship_to_name text,
    ADD COLUMN ship_to_qualifier text,
    ADD COLUMN ship_to_id text;
UPDATE invoices
SET taxes = jsonb_build_array(jsonb_build_object('rate', tax_rate::text, 'amount', tax_total::text))
WHERE tax_total IS NOT NULL OR tax_rate IS NOT NULL;

ALTER TABLE invoice_lines
    ADD COLUMN price_kind text CHECK (price_kind IN ('net', 'invoice', 'calculation', 'gross')),
    ADD COLUMN price_basis numeric,
    ADD COLUMN product_ids jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN allowances_charges jsonb NOT NULL DEFAULT '[]';
UPDATE invoice_lines
SET product_ids = jsonb_build_array(jsonb_build_object('qualifier', NULL, 'id', product_id))
WHERE product_id IS NOT NULL;

-- A partner's invoices whose figures do not reconcile: booked with a warning, or refused (422).
ALTER TABLE partners ADD COLUMN on_mismatch text NOT NULL DEFAULT 'warn' CHECK (on_mismatch IN ('warn', 'reject'));
