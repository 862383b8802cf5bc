-- The fleet's sums {{target}} (kept over every stored job), as the metric's slot view of the same rows.
SELECT * FROM st.{{target}}
