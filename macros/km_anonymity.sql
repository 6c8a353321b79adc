{#- k^m-anonymity of set-valued data (Terrovitis et al. 2008), per group: every itemset of 1..m
    codes that occurs in some record is contained in >= k records of the same group. Records
    are the distinct ids; a record's codes are its distinct codes. Zero rows = pass.

    km_anonymity_violations(relation, id, code, k, m, group_columns=[], aliases=none,
                            code_is_list=false)
      relation      long format, one row per (id, code) with the group columns repeated; or,
                    with code_is_list, one row per record whose ``code`` column is a list
      aliases       output names of the group columns (default: their own names)
    Output: the group values, size, item_1 .. item_m (ascending; NULL past size), support. -#}
{% macro km_anonymity_violations(relation, id, code, k, m, group_columns=[], aliases=none, code_is_list=false) -%}
{{- adapter.dispatch('km_anonymity_violations', 'anon_duck')(relation, id, code, k, m, group_columns, aliases, code_is_list) -}}
{%- endmacro %}

{% macro default__km_anonymity_violations(relation, id, code, k, m, group_columns, aliases, code_is_list) -%}
{{- anon_duck.check_columns(group_columns, 'group_columns', allow_empty=true) -}}
{{- anon_duck.check_columns([id, code] + (group_columns | list), 'id, code and group_columns') -}}
{%- set names = anon_duck.output_names(group_columns, aliases) -%}
{%- set keys = [] -%}
{%- for g in group_columns %}{% do keys.append('g_' ~ loop.index0) %}{% endfor -%}
{%- set code_expr = anon_duck.unnest_list(anon_duck.quote_identifier(code)) if code_is_list else anon_duck.quote_identifier(code) -%}
WITH anon_duck_records AS (
    SELECT DISTINCT {% for g in group_columns %}g_{{ loop.index0 }}, {% endfor %}record, item
    FROM (
        SELECT {% for g in group_columns %}{{ anon_duck.quote_identifier(g) }} AS g_{{ loop.index0 }}, {% endfor %}{{ anon_duck.quote_identifier(id) }} AS record, {{ code_expr }} AS item
        FROM {{ relation }}
    ) AS anon_duck_rows
    WHERE item IS NOT NULL
)
SELECT {% for g in group_columns %}g_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}size, {% for i in range(1, (m | int) + 1) %}item_{{ i }}, {% endfor %}support
FROM (
{{ anon_duck.rare_itemsets('anon_duck_records', keys, 'record', 'item', m, k) }}
) AS anon_duck_rare
{%- endmacro %}
