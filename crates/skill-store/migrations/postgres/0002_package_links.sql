-- A package links only skills the catalog has (by name, any version).
CREATE FUNCTION package_objects_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kind = 'Skill' AND NOT EXISTS (SELECT 1 FROM skills WHERE name = NEW.object_key) THEN
        RAISE EXCEPTION 'unknown_reference: a package links only skills the catalog has';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER package_objects_known BEFORE INSERT OR UPDATE ON package_objects
    FOR EACH ROW EXECUTE FUNCTION package_objects_guard();
