{#- k-anonymity (Sweeney 2002): every equivalence class of the QI tuple has >= k rows.

    k_anonymity_violations(relation, columns, k, aliases=none) renders one SELECT of the
    violating classes, zero rows = pass: the class's values (under ``aliases`` when given,
    else under the columns' own names) and ``class_size``. ``relation`` renders as a relation
    (a dbt Relation, or a quoted name from the Python verifiers). -#}
{% macro k_anonymity_violations(relation, columns, k, aliases=none) -%}
{{- adapter.dispatch('k_anonymity_violations', 'anon_duck')(relation, columns, k, aliases) -}}
{%- endmacro %}

{% macro default__k_anonymity_violations(relation, columns, k, aliases) -%}
{{- anon_duck.k_anonymity_classes(relation, columns, aliases, violating_k=k) -}}
{%- endmacro %}

{#- k_anonymity_classes(relation, columns, aliases=none, violating_k=none): the equivalence
    classes, each with its values and ``class_size``: every class, or with ``violating_k`` only
    those smaller than it. The Python verifier reads its verdict (class counts, sizes, NULLs)
    and its listing off all the classes in one statement. -#}
{% macro k_anonymity_classes(relation, columns, aliases=none, violating_k=none) -%}
{{- adapter.dispatch('k_anonymity_classes', 'anon_duck')(relation, columns, aliases, violating_k) -}}
{%- endmacro %}

{% macro default__k_anonymity_classes(relation, columns, aliases, violating_k) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- set names = anon_duck.output_names(columns, aliases) -%}
SELECT {% for c in columns %}{{ anon_duck.quote_identifier(c) }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}count(*) AS class_size
FROM {{ relation }}
GROUP BY {% for c in columns %}{{ anon_duck.quote_identifier(c) }}{{ ", " if not loop.last }}{% endfor %}
{% if violating_k is not none %}
HAVING {{ anon_duck.k_anonymity_violated('count(*)', violating_k) }}
{%- endif %}
{%- endmacro %}

{#- k_anonymity_violated(class_size, k): the condition "this class violates k-anonymity" over
    the SQL expression ``class_size``: one definition for the listing and the verdict's count. -#}
{% macro k_anonymity_violated(class_size, k) -%}
{{ class_size }} < {{ anon_duck.integer_argument(k, 'k') }}
{%- endmacro %}
