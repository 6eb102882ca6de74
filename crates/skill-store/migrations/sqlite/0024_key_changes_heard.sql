-- SQLite needs nothing here. On PostgreSQL, this migration makes the database tell every core
-- when a table behind the reads a core keeps changes; a SQLite database has one core, which
-- keeps nothing of those reads. (Until this file, SQLite's later migrations were numbered one
-- lower; a database migrated then is renumbered when it opens.)
SELECT 1;
