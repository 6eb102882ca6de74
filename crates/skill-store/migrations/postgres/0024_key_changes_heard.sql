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

DO $$
DECLARE
    heard TEXT;
BEGIN
    FOREACH heard IN ARRAY ARRAY['access_tokens', 'principals', 'grants', 'skills', 'package_objects',
                                 'package_installs', 'package_settings'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION skill_keys_changed()', heard || '_heard', heard);
    END LOOP;
END
$$;
