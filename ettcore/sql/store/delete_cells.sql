-- The stored attribution cells found by stored_cells.sql, deleted by row id.
DELETE FROM st.res_attributed WHERE rowid IN (SELECT ett_rowid FROM ett_old_attributed)
