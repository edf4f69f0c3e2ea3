-- A large interchange's answer (issue 32): its documents and invoices are not stored a second time
-- in `response_body` (tens of MB for 20,000 invoices) but listed from their rows when it is read
-- again. `response_body` then holds the rest of the answer, its lists empty.
ALTER TABLE inbox ADD COLUMN lists_from_rows INTEGER NOT NULL DEFAULT 0;
