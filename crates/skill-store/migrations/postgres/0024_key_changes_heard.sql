-- Every core keeps the reads by key a request makes (a token's credential, a version, a skill's
-- package settings) only while it hears every change of the tables behind them: whoever writes
-- one of them, the database tells the listening cores on `skill_keys`, and they forget what they
-- kept. One notification per statement, sent at its commit.
CREATE FUNCTION skill_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('skill_keys', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER access_tokens_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER principals_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON principals
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER grants_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON grants
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER skills_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON skills
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER package_objects_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON package_objects
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER package_installs_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON package_installs
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
CREATE TRIGGER package_settings_heard AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON package_settings
    FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed();
