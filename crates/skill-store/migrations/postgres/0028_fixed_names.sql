-- What the journal proves of a principal (its name and kind, in `principal.created`) never
-- changes in the database either; and a token keeps the person who had it issued, who held its
-- secret once and so counts among the initiators of what its agent does.
ALTER TABLE access_tokens ADD COLUMN issued_by TEXT REFERENCES principals (id);

CREATE FUNCTION principals_name_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name IS DISTINCT FROM OLD.name OR NEW.kind IS DISTINCT FROM OLD.kind THEN
        RAISE EXCEPTION 'work_immutable: a principal''s name and kind never change';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER principals_name_fixed BEFORE UPDATE ON principals
    FOR EACH ROW EXECUTE FUNCTION principals_name_fixed();

CREATE FUNCTION access_tokens_issuer_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.issued_by IS DISTINCT FROM OLD.issued_by THEN
        RAISE EXCEPTION 'work_immutable: who had a token issued never changes';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER access_tokens_issuer_fixed BEFORE UPDATE ON access_tokens
    FOR EACH ROW EXECUTE FUNCTION access_tokens_issuer_fixed();
