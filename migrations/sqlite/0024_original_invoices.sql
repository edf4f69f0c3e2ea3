-- Corrections and credit notes are linked, not duplicates (issue 51): a credit note, debit note or
-- corrected invoice keeps the number of the earlier invoice it names (X12 REF*OI / REF*IV, EDIFACT
-- RFF+OI / RFF+IV) and, when that invoice was booked from the same sender and seller when it
-- arrived, the booked invoice's id.
ALTER TABLE invoices ADD COLUMN original_invoice TEXT;
ALTER TABLE invoices ADD COLUMN original_invoice_id BLOB;
