{#- k-anonymity (Sweeney 2002): every equivalence class of the QI tuple has >= k rows.

    k_anonymity_violations(relation, columns, k, aliases=none) renders one SELECT of the
    violating classes, zero rows = pass: the class's values (under ``aliases`` when given,
    else under the columns' own names) and ``class_size``. ``relation`` renders as a relation
    (a dbt Relation, or a quoted name from the Python verifiers). -#}
{% macro k_anonymity_violations(relation, columns, k, aliases=none) -%}
{{- adapter.dispatch('k_anonymity_violations', 'anon_duck')(relation, columns, k, aliases) -}}
{%- endmacro %}

{% macro default__k_anonymity_violations(relation, columns, k, aliases) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- set names = anon_duck.output_names(columns, aliases) -%}
SELECT {% for c in columns %}{{ anon_duck.quote_identifier(c) }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}count(*) AS class_size
FROM {{ relation }}
GROUP BY {% for c in columns %}{{ anon_duck.quote_identifier(c) }}{{ ", " if not loop.last }}{% endfor %}

HAVING count(*) < {{ anon_duck.integer_argument(k, 'k') }}
{%- endmacro %}
