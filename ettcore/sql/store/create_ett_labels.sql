-- The label columns (of jobs) each source brought: a column no remaining source has goes with a removal.
CREATE TABLE st.ett_labels (source VARCHAR, label VARCHAR)
