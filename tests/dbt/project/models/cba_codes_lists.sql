-- The same code sets as cba_codes_raw, one row per person with a LIST column (DuckDB's list()).
select pid, list(code order by code) as codes from {{ ref('cba_codes_raw') }} group by pid
