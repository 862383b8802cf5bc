-- A label column only a removed source brought, dropped from the store table {{target}}.
ALTER TABLE st.{{target}} DROP COLUMN {{each column: @}}
