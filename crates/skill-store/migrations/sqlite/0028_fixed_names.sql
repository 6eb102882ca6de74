-- What the journal proves of a principal (its name and kind, in `principal.created`) never
-- changes in the database either; and a token keeps the person who had it issued, who held its
-- secret once and so counts among the initiators of what its agent does.
ALTER TABLE access_tokens ADD COLUMN issued_by TEXT REFERENCES principals (id);

CREATE TRIGGER principals_name_fixed BEFORE UPDATE ON principals
WHEN NEW.name IS NOT OLD.name OR NEW.kind IS NOT OLD.kind
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: a principal''s name and kind never change');
END;
CREATE TRIGGER access_tokens_issuer_fixed BEFORE UPDATE ON access_tokens
WHEN NEW.issued_by IS NOT OLD.issued_by
BEGIN
    SELECT RAISE(ABORT, 'work_immutable: who had a token issued never changes');
END;
