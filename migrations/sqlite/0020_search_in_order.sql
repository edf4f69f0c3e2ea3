-- Search at a million interchanges (issue 34): each lookup of the search box reads its index in the
-- list's order (the interchange's time-ordered id) and stops at a page, so a text that every
-- interchange matches costs a page per lookup rather than a pass over all of them. The invoice
-- lookups need the interchange's id after the value they look up.
DROP INDEX invoices_purchase_order;
CREATE INDEX invoices_purchase_order ON invoices (purchase_order, inbox_id);
DROP INDEX invoices_total_text;
CREATE INDEX invoices_total_text ON invoices ((CAST(total AS TEXT)), inbox_id);
CREATE INDEX invoices_number_inbox ON invoices (number, inbox_id);
