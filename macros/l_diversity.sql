{#- l-diversity (Machanavajjhala et al. 2007) of the sensitive column within each equivalence
    class of the QI tuple. Zero rows = pass.

    l_diversity_violations(relation, columns, sensitive, l, aliases=none, entropy=false):
      distinct l-diversity (default): a class with fewer than ``l`` distinct non-NULL values of
        ``sensitive`` violates;
      entropy l-diversity (entropy=true): a class whose entropy -sum p_s ln p_s (over the
        class's non-NULL values) is below ln(l) violates (1e-9 of slack for rounding: a class
        with l equally frequent values passes).
    Output: the class values, ``class_size`` (rows, NULL sensitive values included),
    ``n_distinct`` and ``entropy``. -#}
{% macro l_diversity_violations(relation, columns, sensitive, l, aliases=none, entropy=false) -%}
{{- adapter.dispatch('l_diversity_violations', 'anon_duck')(relation, columns, sensitive, l, aliases, entropy) -}}
{%- endmacro %}

{% macro default__l_diversity_violations(relation, columns, sensitive, l, aliases, entropy) -%}
{{- anon_duck.l_diversity_classes(relation, columns, sensitive, aliases, violating_l=l, entropy=entropy) -}}
{%- endmacro %}

{#- l_diversity_classes(relation, columns, sensitive, aliases=none, violating_l=none,
    entropy=false): the equivalence classes with ``class_size``, ``n_distinct`` and ``entropy``
    (as above): every class, plus ``n_missing`` (its rows whose sensitive value is NULL), or
    with ``violating_l`` only the classes that violate l-diversity (distinct, or entropy with
    ``entropy``). The Python verifier reads its verdict and its listing off all the classes in
    one statement. -#}
{% macro l_diversity_classes(relation, columns, sensitive, aliases=none, violating_l=none, entropy=false) -%}
{{- adapter.dispatch('l_diversity_classes', 'anon_duck')(relation, columns, sensitive, aliases, violating_l, entropy) -}}
{%- endmacro %}

{% macro default__l_diversity_classes(relation, columns, sensitive, aliases, violating_l, entropy) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- if sensitive in columns -%}
{{- exceptions.raise_compiler_error("anon_duck: argument sensitive (" ~ sensitive ~ ") is also one of the columns") -}}
{%- endif -%}
{%- set names = anon_duck.output_names(columns, aliases) -%}
{%- set entropy_sql = "ln(sum(CASE WHEN s IS NOT NULL THEN n_s END)) - sum(CASE WHEN s IS NOT NULL THEN n_s * ln(n_s) END) / sum(CASE WHEN s IS NOT NULL THEN n_s END)" -%}
SELECT {% for c in columns %}q_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}
       sum(n_s) AS class_size,
       count(s) AS n_distinct,
       {{ entropy_sql }} AS entropy{% if violating_l is none %},
       coalesce(sum(CASE WHEN s IS NULL THEN n_s END), 0) AS n_missing{% endif %}
FROM (
    SELECT {% for c in columns %}{{ anon_duck.quote_identifier(c) }} AS q_{{ loop.index0 }}, {% endfor %}{{ anon_duck.quote_identifier(sensitive) }} AS s, count(*) AS n_s
    FROM {{ relation }}
    GROUP BY {% for c in columns %}{{ anon_duck.quote_identifier(c) }}, {% endfor %}{{ anon_duck.quote_identifier(sensitive) }}
) AS anon_duck_cells
GROUP BY {% for c in columns %}q_{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %}
{% if violating_l is not none %}
HAVING {{ anon_duck.l_diversity_violated('count(s)', entropy_sql, violating_l, entropy) }}
{%- endif %}
{%- endmacro %}

{#- l_diversity_violated(n_distinct, entropy_value, l, entropy=false): the condition "this class
    violates" over the SQL expressions of its distinct count and its entropy: one definition
    for the listing and the verdict's count. -#}
{% macro l_diversity_violated(n_distinct, entropy_value, l, entropy=false) -%}
{%- set l_value = anon_duck.integer_argument(l, 'l') -%}
{% if entropy -%}
coalesce({{ entropy_value }}, 0) < ln({{ l_value }}) - 1e-9
{%- else -%}
{{ n_distinct }} < {{ l_value }}
{%- endif %}
{%- endmacro %}
