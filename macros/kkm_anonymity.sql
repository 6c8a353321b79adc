{#- (k, k^m)-anonymity of demographics + codes (seed 000, Definition 1, through its sufficient
    Conditions 1 and 2, spec rt_kkm §2.1). A class is the QI tuple of a record (a distinct id);
    records reach their codes through the id.
      Condition 1 ('class'):   every class has >= k records;
      Condition 2 ('itemset'): inside each class, every itemset of 1..m codes that occurs is
                               contained in >= k records of that class. Only classes that pass
                               Condition 1 are searched: in a smaller class every itemset fails
                               trivially, and listing them would bury the evidence.
    Zero rows = pass.

    kkm_anonymity_violations(relation, columns, id, code, k, m, codes_relation=none, aliases=none)
      relation        the records: id and the QI columns (one row per record, or long format
                      with the code column too: rows are made distinct on (id, QIs))
      codes_relation  long (id, code) table; none = the code column of ``relation``
    Output: kind ('class' | 'itemset'), the class values, class_size, size, item_1 .. item_m,
    support (NULL size/items/support on 'class' rows). -#}
{% macro kkm_anonymity_violations(relation, columns, id, code, k, m, codes_relation=none, aliases=none) -%}
{{- adapter.dispatch('kkm_anonymity_violations', 'anon_duck')(relation, columns, id, code, k, m, codes_relation, aliases) -}}
{%- endmacro %}

{% macro default__kkm_anonymity_violations(relation, columns, id, code, k, m, codes_relation, aliases) -%}
WITH {{ anon_duck.kkm_anonymity_ctes(relation, columns, id, code, k, codes_relation) }}
{{ anon_duck.kkm_anonymity_violating(columns, k, m, aliases) }}
{%- endmacro %}

{#- kkm_anonymity_ctes(relation, columns, id, code, k, codes_relation=none) renders the CTEs of
    the check (without the leading WITH, so a caller adds its own after them), the classes
    computed once for both conditions, and for the Python verifier's verdict and summary:
      anon_duck_classed  one row per distinct (record, QIs): record, q_0 .. q_<n-1>, n (the
                         relation's rows with that id and QIs: their sum is its row count, NULL
                         ids and QIs included), class_size (records of the class, a window);
      anon_duck_classes  one row per class: q_0 .., class_size;
      anon_duck_records  one row per distinct (class, record, code) of the classes of at least
                         k records: q_0 .., class_size, record, item. -#}
{% macro kkm_anonymity_ctes(relation, columns, id, code, k, codes_relation=none) -%}
{{- adapter.dispatch('kkm_anonymity_ctes', 'anon_duck')(relation, columns, id, code, k, codes_relation) -}}
{%- endmacro %}

{% macro default__kkm_anonymity_ctes(relation, columns, id, code, k, codes_relation) -%}
{{- anon_duck.check_columns(columns, 'columns') -}}
{{- anon_duck.check_columns([id] + (columns | list), 'id and columns') -}}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
{%- set q_list %}{% for c in columns %}q_{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %}{% endset -%}
anon_duck_classed AS (
    SELECT record, {{ q_list }}, n, count(*) OVER (PARTITION BY {{ q_list }}) AS class_size
    FROM (
        SELECT {{ anon_duck.quote_identifier(id) }} AS record{% for c in columns %}, {{ anon_duck.quote_identifier(c) }} AS q_{{ loop.index0 }}{% endfor %}, count(*) AS n
        FROM {{ relation }}
        GROUP BY {{ anon_duck.quote_identifier(id) }}{% for c in columns %}, {{ anon_duck.quote_identifier(c) }}{% endfor %}
    ) AS anon_duck_distinct
), anon_duck_classes AS (
    SELECT DISTINCT {{ q_list }}, class_size FROM anon_duck_classed
), anon_duck_records AS (
    SELECT DISTINCT {% for c in columns %}r.q_{{ loop.index0 }}, {% endfor %}r.class_size, r.record, c.{{ anon_duck.quote_identifier(code) }} AS item
    FROM anon_duck_classed AS r
    JOIN {{ codes_relation if codes_relation is not none else relation }} AS c
      ON c.{{ anon_duck.quote_identifier(id) }} = r.record
    WHERE r.class_size >= {{ k_value }} AND c.{{ anon_duck.quote_identifier(code) }} IS NOT NULL
)
{%- endmacro %}

{#- kkm_anonymity_violating(columns, k, m, aliases=none): one SELECT of the violations, read off
    the CTEs of kkm_anonymity_ctes: the classes smaller than k, then the rare itemsets of the
    others (the dbt package's rare_itemsets), with the output of kkm_anonymity_violations. -#}
{% macro kkm_anonymity_violating(columns, k, m, aliases=none) -%}
{{- adapter.dispatch('kkm_anonymity_violating', 'anon_duck')(columns, k, m, aliases) -}}
{%- endmacro %}

{% macro default__kkm_anonymity_violating(columns, k, m, aliases) -%}
{%- set names = anon_duck.output_names(columns, aliases) -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
{%- set keys = [] -%}
{%- for c in columns %}{% do keys.append('q_' ~ loop.index0) %}{% endfor -%}
SELECT 'class' AS kind, {% for c in columns %}q_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}class_size,
       NULL AS size, {% for i in range(1, (m | int) + 1) %}NULL AS item_{{ i }}, {% endfor %}NULL AS support
FROM anon_duck_classes
WHERE class_size < {{ k_value }}
UNION ALL
SELECT 'itemset' AS kind, {% for c in columns %}q_{{ loop.index0 }}, {% endfor %}class_size, size, {% for i in range(1, (m | int) + 1) %}item_{{ i }}, {% endfor %}support
FROM (
{{ anon_duck.rare_itemsets('anon_duck_records', keys + ['class_size'], 'record', 'item', m, k) }}
) AS anon_duck_rare
{%- endmacro %}
