-- The trace a call belongs to: the W3C traceparent of the span that created it (NULL when traces
-- were off). Its executor's span is that span's child. Written once, with the call.
ALTER TABLE skill_invocations ADD COLUMN traceparent TEXT CHECK (traceparent IS NULL OR length(traceparent) = 55);

CREATE TRIGGER skill_invocations_trace_fixed BEFORE UPDATE OF traceparent ON skill_invocations
WHEN NEW.traceparent IS NOT OLD.traceparent
BEGIN
    SELECT RAISE(ABORT, 'invocation_immutable: what a call is never changes');
END;
