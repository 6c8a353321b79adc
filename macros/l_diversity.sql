{#- l-diversity (Machanavajjhala et al. 2007) of the sensitive column within each equivalence
    class of the QI tuple. Zero rows = pass.

    l_diversity_violations(relation, columns, sensitive, l, aliases=none, entropy=false,
                           kind=none, c=none):
      kind 'distinct' (the default): a class with fewer than ``l`` distinct values of
        ``sensitive`` violates;
      kind 'entropy' (or entropy=true, the older spelling): a class whose entropy
        -sum p_s ln p_s is below ln(l) violates (1e-9 of slack for rounding: a class with l
        equally frequent values passes);
      kind 'recursive' with ``c`` > 0: recursive (c, l)-diversity: with the class's value
        counts r_1 >= r_2 >= ... >= r_m, the class violates unless r_1 < c (r_l + ... + r_m)
        (a class with fewer than l values has an empty tail and violates).
    NULL: a NULL sensitive value is one value of its own ("unknown"), as GROUP BY makes it and
    as a reader of the release sees it; a NULL QI is a value of its own too (docs/dbt.md).
    Output: the class values, ``class_size``, ``n_distinct``, ``entropy``, ``top_count`` (r_1)
    and ``tail_count`` (r_l + ... + r_m; NULL unless kind is 'recursive'). -#}
{% macro l_diversity_violations(relation, columns, sensitive, l, aliases=none, entropy=false, kind=none, c=none) -%}
{{- adapter.dispatch('l_diversity_violations', 'anon_duck')(relation, columns, sensitive, l, aliases, entropy, kind, c) -}}
{%- endmacro %}

{% macro default__l_diversity_violations(relation, columns, sensitive, l, aliases, entropy, kind, c) -%}
{{- anon_duck.l_diversity_classes(relation, columns, sensitive, aliases, violating_l=l, entropy=entropy, kind=kind, c=c, l=l) -}}
{%- endmacro %}

{#- l_diversity_classes(relation, columns, sensitive, aliases=none, violating_l=none,
    entropy=false, kind=none, c=none, l=none): the equivalence classes with ``class_size``,
    ``n_distinct``, ``entropy``, ``top_count`` and ``tail_count`` (as above; the tail needs
    ``l``): every class, plus ``n_missing`` (its rows whose sensitive value is NULL), or with
    ``violating_l`` only the classes that violate l-diversity of the given kind. The Python
    verifier reads its verdict and its listing off all the classes in one statement. -#}
{% macro l_diversity_classes(relation, columns, sensitive, aliases=none, violating_l=none, entropy=false, kind=none, c=none, l=none) -%}
{{- adapter.dispatch('l_diversity_classes', 'anon_duck')(relation, columns, sensitive, aliases, violating_l, entropy, kind, c, l) -}}
{%- endmacro %}

{% macro default__l_diversity_classes(relation, columns, sensitive, aliases, violating_l, entropy, kind, c, l) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- if sensitive in columns -%}
{{- exceptions.raise_compiler_error("anon_duck: argument sensitive (" ~ sensitive ~ ") is also one of the columns") -}}
{%- endif -%}
{%- set kind = anon_duck.l_diversity_kind(kind, entropy) -%}
{%- set names = anon_duck.output_names(columns, aliases) -%}
{%- set entropy_sql = "ln(sum(n_s)) - sum(n_s * ln(n_s)) / sum(n_s)" -%}
{%- set tail_sql = "sum(CASE WHEN s_rank >= " ~ anon_duck.integer_argument(l, 'l') ~ " THEN n_s ELSE 0 END)" if kind == 'recursive' else "CAST(NULL AS BIGINT)" -%}
SELECT {% for col in columns %}q_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}
       sum(n_s) AS class_size,
       count(*) AS n_distinct,
       {{ entropy_sql }} AS entropy,
       max(n_s) AS top_count,
       {{ tail_sql }} AS tail_count{% if violating_l is none %},
       coalesce(sum(CASE WHEN s IS NULL THEN n_s END), 0) AS n_missing{% endif %}
FROM (
    SELECT {% for col in columns %}{{ anon_duck.quote_identifier(col) }} AS q_{{ loop.index0 }}, {% endfor %}{{ anon_duck.quote_identifier(sensitive) }} AS s, count(*) AS n_s,
           row_number() OVER (PARTITION BY {% for col in columns %}{{ anon_duck.quote_identifier(col) }}{{ ", " if not loop.last }}{% endfor %} ORDER BY count(*) DESC) AS s_rank
    FROM {{ relation }}
    GROUP BY {% for col in columns %}{{ anon_duck.quote_identifier(col) }}, {% endfor %}{{ anon_duck.quote_identifier(sensitive) }}
) AS anon_duck_cells
GROUP BY {% for col in columns %}q_{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %}
{% if violating_l is not none %}
HAVING {{ anon_duck.l_diversity_violated('count(*)', entropy_sql, violating_l, kind=kind, c=c, top='max(n_s)', tail=tail_sql) }}
{%- endif %}
{%- endmacro %}

{#- l_diversity_kind(kind, entropy): the kind, checked ('distinct', 'entropy' or 'recursive');
    none means 'entropy' when the older flag entropy is true, else 'distinct'. -#}
{% macro l_diversity_kind(kind, entropy=false) -%}
{%- if kind is none -%}{{- return('entropy' if entropy else 'distinct') -}}{%- endif -%}
{%- if kind not in ['distinct', 'entropy', 'recursive'] -%}
{{- exceptions.raise_compiler_error("anon_duck: argument kind must be 'distinct', 'entropy' or 'recursive'; got " ~ kind) -}}
{%- endif -%}
{{- return(kind) -}}
{%- endmacro %}

{#- l_diversity_violated(n_distinct, entropy_value, l, entropy=false, kind=none, c=none,
    top=none, tail=none): the condition "this class violates" over the SQL expressions of its
    distinct count, its entropy and (recursive) its largest count and tail: one definition for
    the listing and the verdict's count. -#}
{% macro l_diversity_violated(n_distinct, entropy_value, l, entropy=false, kind=none, c=none, top=none, tail=none) -%}
{%- set l_value = anon_duck.integer_argument(l, 'l') -%}
{%- set kind = anon_duck.l_diversity_kind(kind, entropy) -%}
{% if kind == 'entropy' -%}
coalesce({{ entropy_value }}, 0) < ln({{ l_value }}) - 1e-9
{%- elif kind == 'recursive' -%}
CAST({{ top }} AS {{ anon_duck.type_double() }}) >= {{ anon_duck.positive_number(c, 'c') }} * {{ tail }}
{%- else -%}
{{ n_distinct }} < {{ l_value }}
{%- endif %}
{%- endmacro %}
