-- The trace a call belongs to: the W3C traceparent of the span that created it (NULL when traces
-- were off). Its executor's span is that span's child. Written once, with the call.
ALTER TABLE skill_invocations ADD COLUMN traceparent TEXT CHECK (traceparent IS NULL OR length(traceparent) = 55);

CREATE FUNCTION skill_invocations_trace_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.traceparent IS DISTINCT FROM OLD.traceparent THEN
        RAISE EXCEPTION 'invocation_immutable: what a call is never changes';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER skill_invocations_trace_fixed BEFORE UPDATE OF traceparent ON skill_invocations
FOR EACH ROW EXECUTE FUNCTION skill_invocations_trace_fixed();
