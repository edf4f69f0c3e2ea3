-- Where each booked value was read (issue 30): the positions of the segments behind an invoice's
-- and a line's values. Invoices booked before have none ('{}': every position unknown).
ALTER TABLE invoices ADD COLUMN sources TEXT NOT NULL DEFAULT '{}';
ALTER TABLE invoice_lines ADD COLUMN sources TEXT NOT NULL DEFAULT '{}';
