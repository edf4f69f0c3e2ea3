-- Search (issue 34): the console's search box and `GET /v1/interchanges?q=` find an interchange by
-- the first digits of its control number (leading zeros aside), an invoice's purchase order or an
-- invoice's total as stated, each from an index (a union of lookups, never a scan). Invoice numbers
-- and sender ids have theirs already.
CREATE INDEX inbox_control_digits ON inbox (ltrim(control_number, '0'));
CREATE INDEX invoices_purchase_order ON invoices (purchase_order);
CREATE INDEX invoices_total_text ON invoices ((CAST(total AS TEXT)));
