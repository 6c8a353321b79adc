-- Re-identification risk of the raw toy table and of its k = 2 release, side by side
-- (prosecutor model; definitions in the package's macros/risk.sql and docs/dbt.md).
select 'raw' as stage, * from ({{ anon_duck.risk_measures(ref('toy_raw'), ['age', 'sex', 'zip'], k=2) }}) as r
union all
select 'release' as stage, * from ({{ anon_duck.risk_measures(ref('toy_release'), ['age', 'sex', 'zip'], k=2) }}) as r
