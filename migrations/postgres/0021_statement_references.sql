-- References between an interchange's rows checked once per statement (issue 32). A foreign key
-- checks each inserted row on its own: a trigger event queued, a lookup of the parent and a lock
-- on it (a WAL record), about half the time of booking a 20,000-invoice interchange. These four
-- references are checked instead by one lookup per row inside one query per statement, and their
-- cascades run once per statement. What the foreign keys guaranteed stays:
--   * a row naming a parent that does not exist is refused with foreign_key_violation (23503), in
--     the statement that writes it, whether it comes by INSERT, COPY or UPDATE;
--   * an invoice's document belongs to the invoice's interchange (the key held that only apart);
--   * removing an interchange removes its documents, invoices and lines (and with the invoices
--     their outbox messages and export entries, whose foreign keys stay);
--   * a parent's id does not change while a row names it.
-- What they did and these do not: lock the parent. The service writes documents, invoices and
-- lines only in the transaction that claims their interchange, before anyone else can see it, so no
-- other transaction can remove a parent they name. A writer outside the service that adds rows to
-- an interchange another transaction is purging at that moment could leave them behind.
-- Each lookup is a subquery run per row (OFFSET 0 keeps the planner from turning it into a join),
-- so the plan a connection caches while a table is empty stays an index lookup as it grows. The
-- cascades are joins planned from the tables' statistics, and planned again when ANALYZE updates
-- them (a purge removes interchanges days old, long after the first ANALYZE).
ALTER TABLE documents DROP CONSTRAINT documents_inbox_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_inbox_id_fkey, DROP CONSTRAINT invoices_document_id_fkey;
ALTER TABLE invoice_lines DROP CONSTRAINT invoice_lines_invoice_id_fkey;

-- The reference refused: the same error a foreign key raises.
CREATE FUNCTION edi_inbox_orphan(child text, parent text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE foreign_key_violation USING
        MESSAGE = format('a row of %s names a row of %s that does not exist', child, parent),
        TABLE = child;
END $$;

CREATE FUNCTION edi_inbox_documents_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM written w
            WHERE NOT EXISTS (SELECT FROM inbox p WHERE p.id = w.inbox_id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('documents', 'inbox');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_invoices_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM written w WHERE NOT EXISTS (SELECT FROM documents p
            WHERE p.id = w.document_id AND p.inbox_id = w.inbox_id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('invoices', 'documents');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_lines_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM written w
            WHERE NOT EXISTS (SELECT FROM invoices p WHERE p.id = w.invoice_id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('invoice_lines', 'invoices');
    END IF;
    RETURN NULL;
END $$;

-- A parent's changed id (the service changes an interchange's only when it replaces a rejected
-- attempt, which booked nothing) must not leave a row naming the old one.
CREATE FUNCTION edi_inbox_inbox_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM gone g WHERE NOT EXISTS (SELECT FROM kept k WHERE k.id = g.id)
            AND EXISTS (SELECT FROM documents c WHERE c.inbox_id = g.id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('documents', 'inbox');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_documents_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM gone g WHERE NOT EXISTS (SELECT FROM kept k WHERE k.id = g.id AND k.inbox_id = g.inbox_id)
            AND EXISTS (SELECT FROM invoices c WHERE c.document_id = g.id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('invoices', 'documents');
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_invoices_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM gone g WHERE NOT EXISTS (SELECT FROM kept k WHERE k.id = g.id)
            AND EXISTS (SELECT FROM invoice_lines c WHERE c.invoice_id = g.id OFFSET 0)) THEN
        PERFORM edi_inbox_orphan('invoice_lines', 'invoices');
    END IF;
    RETURN NULL;
END $$;

-- Removing a parent removes the rows that name it (ON DELETE CASCADE), a statement at a time.
CREATE FUNCTION edi_inbox_inbox_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM documents WHERE inbox_id = ANY (ARRAY(SELECT id FROM gone));
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_documents_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM invoices WHERE document_id = ANY (ARRAY(SELECT id FROM gone));
    RETURN NULL;
END $$;

CREATE FUNCTION edi_inbox_invoices_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM invoice_lines WHERE invoice_id = ANY (ARRAY(SELECT id FROM gone));
    RETURN NULL;
END $$;

CREATE TRIGGER documents_inserted AFTER INSERT ON documents REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_documents_written();
CREATE TRIGGER documents_updated AFTER UPDATE ON documents REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_documents_written();
CREATE TRIGGER invoices_inserted AFTER INSERT ON invoices REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_invoices_written();
CREATE TRIGGER invoices_updated AFTER UPDATE ON invoices REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_invoices_written();
CREATE TRIGGER invoice_lines_inserted AFTER INSERT ON invoice_lines REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_lines_written();
CREATE TRIGGER invoice_lines_updated AFTER UPDATE ON invoice_lines REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_lines_written();

CREATE TRIGGER inbox_renamed AFTER UPDATE ON inbox REFERENCING OLD TABLE AS gone NEW TABLE AS kept
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_inbox_renamed();
CREATE TRIGGER documents_renamed AFTER UPDATE ON documents REFERENCING OLD TABLE AS gone NEW TABLE AS kept
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_documents_renamed();
CREATE TRIGGER invoices_renamed AFTER UPDATE ON invoices REFERENCING OLD TABLE AS gone NEW TABLE AS kept
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_invoices_renamed();

CREATE TRIGGER inbox_removed AFTER DELETE ON inbox REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_inbox_removed();
CREATE TRIGGER documents_removed AFTER DELETE ON documents REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_documents_removed();
CREATE TRIGGER invoices_removed AFTER DELETE ON invoices REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION edi_inbox_invoices_removed();
