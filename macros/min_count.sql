{#- Small-cell suppression of a table of counts (the threshold rule of statistical disclosure
    control): every row that names its subject (``key`` not NULL) counts at least ``min_count``
    of the subject's units, or has a NULL count (a suppressed cell); rarer subjects are counted
    only merged under a NULL key.

    min_count_violations(relation, key, count, min_count) renders one SELECT of the violating
    rows, zero rows = pass: ``key`` and ``count`` under their own names. anon_duck gates every
    ``<release>_retention`` with it (key ``code``, count ``persons_input``). -#}
{% macro min_count_violations(relation, key, count, min_count) -%}
{{- adapter.dispatch('min_count_violations', 'anon_duck')(relation, key, count, min_count) -}}
{%- endmacro %}

{% macro default__min_count_violations(relation, key, count, min_count) -%}
{{- anon_duck.check_columns([key, count], 'key and count') -}}
SELECT {{ anon_duck.quote_identifier(key) }}, {{ anon_duck.quote_identifier(count) }}
FROM {{ relation }}
WHERE {{ anon_duck.quote_identifier(key) }} IS NOT NULL
  AND {{ anon_duck.quote_identifier(count) }} < {{ anon_duck.integer_argument(min_count, 'min_count') }}
{%- endmacro %}
