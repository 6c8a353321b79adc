-- The same code sets as cba_codes_raw, one row per person with a LIST (array) column.
select pid,
{% if target.type == 'spark' %}
       array_sort(collect_list(code)) as codes
{% elif target.type == 'postgres' %}
       array_agg(code order by code) as codes
{% else %}
       list(code order by code) as codes
{% endif %}
from {{ ref('cba_codes_raw') }}
group by pid
