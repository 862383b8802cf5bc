-- Per refresh after $published_id (the last the mirror's pointer includes), how many rows of {{table}} it inserted
-- that the store still holds (ingest_id is a stored column: its zone maps make this a read of what changed).
SELECT ingest_id, count(*) AS n
FROM st.rows_{{table}}
WHERE ingest_id > $published_id
GROUP BY ingest_id
