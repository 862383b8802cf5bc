-- Every row of the fleet's sums {{target}}, deleted (summed_slots.sql's rows take their place).
DELETE FROM st.{{target}}
