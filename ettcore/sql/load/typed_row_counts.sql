-- Per trace table, its typed rows counted, every one used (reason NULL): the row accounting of a trace without a
-- finding, where no row is rejected, so that no column of a row is read (row_accounting.sql reads each row's job id,
-- file and row number).  Both engines run this file (Spark through ettcore.engines.spark.transpile).
{{each tables joined by UNION ALL: SELECT '@' AS table_name, CAST(NULL AS VARCHAR) AS reason, count(*) AS n FROM typed_@}}
