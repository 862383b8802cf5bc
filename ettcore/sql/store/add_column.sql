-- A column the loader or the metric now produces, added to the store table {{target}}.
ALTER TABLE st.{{target}} ADD COLUMN {{each column: @ @type}}
