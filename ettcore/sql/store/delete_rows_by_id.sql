-- The stored rows of {{table}} found by stored_row_ids.sql, deleted by row id.
DELETE FROM st.rows_{{table}} WHERE rowid IN (SELECT ett_rowid FROM ett_old_{{table}})
