-- A stopping executor drains its session first: from then on, claims made with it take nothing,
-- so a claim the executor is about to give up cannot take a call it would never run.
ALTER TABLE executor_sessions ADD COLUMN draining_at TIMESTAMPTZ;
