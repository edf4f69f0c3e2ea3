-- AS2 per partner: what its messages must be (optional, signed, encrypted, signed-encrypted), the
-- certificates its signatures are verified with (a JSON array of PEM certificates), and where its
-- asynchronous MDNs may be delivered (a JSON array of URL prefixes; none: no asynchronous MDN).
ALTER TABLE partners ADD COLUMN as2_security text NOT NULL DEFAULT 'optional'
    CHECK (as2_security IN ('optional', 'signed', 'encrypted', 'signed-encrypted'));
ALTER TABLE partners ADD COLUMN as2_certificates text NOT NULL DEFAULT '[]';
ALTER TABLE partners ADD COLUMN as2_mdn_urls text NOT NULL DEFAULT '[]';
