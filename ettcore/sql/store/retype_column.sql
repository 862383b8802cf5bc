-- A column of the store table {{target}} that no row had a value for (DuckDB's NULL type) takes the first real type.
ALTER TABLE st.{{target}} ALTER COLUMN {{each column: @ TYPE @type}}
