-- The fleet's sums {{target}}, as summed_slots.sql gives them.
INSERT INTO st.{{target}} BY NAME
SELECT * FROM ett_summed
