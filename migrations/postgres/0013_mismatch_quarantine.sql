-- A partner's invoices whose stated figures do not reconcile can be held for an operator
-- (`on_mismatch = 'quarantine'`), with their own quarantine reason.
ALTER TABLE partners DROP CONSTRAINT partners_on_mismatch_check;
ALTER TABLE partners ADD CONSTRAINT partners_on_mismatch_check
    CHECK (on_mismatch IN ('warn', 'reject', 'quarantine'));
ALTER TABLE quarantine DROP CONSTRAINT quarantine_reason_check;
ALTER TABLE quarantine ADD CONSTRAINT quarantine_reason_check
    CHECK (reason IN ('conflict', 'invalid', 'mismatch'));
