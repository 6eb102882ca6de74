-- A package links only skills the catalog has (by name, any version).
CREATE TRIGGER package_objects_known_insert BEFORE INSERT ON package_objects
WHEN NEW.kind = 'Skill' AND NOT EXISTS (SELECT 1 FROM skills WHERE name = NEW.object_key)
BEGIN
    SELECT RAISE(ABORT, 'unknown_reference: a package links only skills the catalog has');
END;

CREATE TRIGGER package_objects_known_update BEFORE UPDATE ON package_objects
WHEN NEW.kind = 'Skill' AND NOT EXISTS (SELECT 1 FROM skills WHERE name = NEW.object_key)
BEGIN
    SELECT RAISE(ABORT, 'unknown_reference: a package links only skills the catalog has');
END;
