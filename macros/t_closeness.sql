{#- t-closeness (Li, Li, Venkatasubramanian, ICDE 2007) of the sensitive column within each
    equivalence class of the QI tuple: the Earth Mover's Distance between the class's
    distribution of ``sensitive`` and the reference distribution (the whole relation, or the
    relation ``reference``) is at most ``t``. Zero rows = pass.

    t_closeness_violations(relation, columns, sensitive, t, ordered=false, reference=none,
                           aliases=none):
      ordered=false: equal ground distance (categorical values): EMD = 1/2 sum_s |p_s - q_s|
        over every value of the class or the reference;
      ordered=true: ordered distance (numeric values): with the reference's m distinct
        values in ascending order v_1 < ... < v_m, EMD = 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|
        (0 when m = 1); a class value the reference lacks is not one of the v_i, so give a
        reference that holds every released value (the input, or the relation itself).
    A class violates when EMD > t + 1e-9 (slack for rounding). NULL: a NULL sensitive value is
    one value of its own (ordered: after every other value), a NULL QI too (docs/dbt.md).
    Output: the class values, ``class_size`` and ``emd``. -#}
{% macro t_closeness_violations(relation, columns, sensitive, t, ordered=false, reference=none, aliases=none) -%}
{{- adapter.dispatch('t_closeness_violations', 'anon_duck')(relation, columns, sensitive, t, ordered, reference, aliases) -}}
{%- endmacro %}

{% macro default__t_closeness_violations(relation, columns, sensitive, t, ordered, reference, aliases) -%}
{{- anon_duck.t_closeness_classes(relation, columns, sensitive, aliases, ordered=ordered, reference=reference, violating_t=t) -}}
{%- endmacro %}

{#- t_closeness_classes(relation, columns, sensitive, aliases=none, ordered=false,
    reference=none, violating_t=none): the equivalence classes with ``class_size`` and ``emd``
    (as above): every class, or with ``violating_t`` only the violating ones. -#}
{% macro t_closeness_classes(relation, columns, sensitive, aliases=none, ordered=false, reference=none, violating_t=none) -%}
{{- adapter.dispatch('t_closeness_classes', 'anon_duck')(relation, columns, sensitive, aliases, ordered, reference, violating_t) -}}
{%- endmacro %}

{% macro default__t_closeness_classes(relation, columns, sensitive, aliases, ordered, reference, violating_t) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{%- if sensitive in columns -%}
{{- exceptions.raise_compiler_error("anon_duck: argument sensitive (" ~ sensitive ~ ") is also one of the columns") -}}
{%- endif -%}
{%- set names = anon_duck.output_names(columns, aliases) -%}
{%- set emd_sql = "CASE WHEN max(m) > 1 THEN sum(abs(cum)) / (max(m) - 1) ELSE 0.0 END" if ordered else "0.5 * (sum(abs(c.p - coalesce(r.q, 0.0))) + 1.0 - sum(coalesce(r.q, 0.0)))" -%}
{%- set keys -%}{% for col in columns %}{{ anon_duck.quote_identifier(col) }}{{ ", " if not loop.last }}{% endfor %}{%- endset -%}
{%- set s = anon_duck.quote_identifier(sensitive) -%}
{%- set cells -%}
    SELECT {% for col in columns %}{{ anon_duck.quote_identifier(col) }} AS q_{{ loop.index0 }}, {% endfor %}{{ s }} AS s,
           dense_rank() OVER (ORDER BY {{ keys }}) AS class_id,
           CAST(count(*) AS {{ anon_duck.type_double() }}) / sum(count(*)) OVER (PARTITION BY {{ keys }}) AS p,
           sum(count(*)) OVER (PARTITION BY {{ keys }}) AS class_size
    FROM {{ relation }}
    GROUP BY {{ keys }}, {{ s }}
{%- endset -%}
{%- set ref -%}
    SELECT {{ s }} AS s, CAST(count(*) AS {{ anon_duck.type_double() }}) / sum(count(*)) OVER () AS q
    FROM {{ relation if reference is none else reference }}
    GROUP BY {{ s }}
{%- endset -%}
SELECT {% for col in columns %}q_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}
       max(class_size) AS class_size,
{% if ordered %}
       {{ emd_sql }} AS emd
FROM (
    SELECT g.q_0{% for col in columns[1:] %}, g.q_{{ loop.index }}{% endfor %}, g.class_size, g.m,
           sum(coalesce(c.p, 0.0) - g.q) OVER (PARTITION BY g.class_id ORDER BY g.rnk
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum
    FROM (
        SELECT k.*, r.s, r.q, r.rnk, r.m
        FROM (SELECT DISTINCT {% for col in columns %}q_{{ loop.index0 }}, {% endfor %}class_id, class_size FROM ({{ cells }}) AS anon_duck_c) AS k
        CROSS JOIN (SELECT s, q, row_number() OVER (ORDER BY s NULLS LAST) AS rnk, count(*) OVER () AS m
                    FROM ({{ ref }}) AS anon_duck_r0) AS r
    ) AS g
    LEFT JOIN ({{ cells }}) AS c ON c.class_id = g.class_id AND c.s IS NOT DISTINCT FROM g.s
) AS anon_duck_cum
{% else %}
       {{ emd_sql }} AS emd
FROM ({{ cells }}) AS c
LEFT JOIN ({{ ref }}) AS r ON c.s IS NOT DISTINCT FROM r.s
{% endif %}
GROUP BY {% for col in columns %}q_{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %}
{% if violating_t is not none %}
HAVING {{ anon_duck.t_closeness_violated(emd_sql, violating_t) }}
{%- endif %}
{%- endmacro %}

{#- t_closeness_violated(emd, t): the condition "this class violates" over the SQL expression
    of its EMD: one definition for the listing and the verdict's count. -#}
{% macro t_closeness_violated(emd, t) -%}
{{ emd }} > {{ anon_duck.positive_number(t, 't', maximum=1, allow_zero=true) }} + 1e-9
{%- endmacro %}
