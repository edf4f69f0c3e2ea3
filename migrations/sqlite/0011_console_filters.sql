-- The operator console (and GET /v1/interchanges) filter interchanges by control number and list the
-- rejected ones; both answered from an index instead of a scan of the inbox. The rejected index is
-- partial: processed interchanges, nearly all of them, never enter it.
CREATE INDEX inbox_control_number ON inbox (control_number);
CREATE INDEX inbox_rejected ON inbox (id) WHERE status = 'rejected';
