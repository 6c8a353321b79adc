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
{{- anon_duck.check_columns(columns, 'columns') -}}
{{- anon_duck.check_columns([id] + (columns | list), 'id and columns') -}}
{%- set names = anon_duck.output_names(columns, aliases) -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
{%- set keys = [] -%}
{%- for c in columns %}{% do keys.append('q_' ~ loop.index0) %}{% endfor -%}
{%- set q_list %}{% for c in columns %}q_{{ loop.index0 }}{{ ", " if not loop.last }}{% endfor %}{% endset -%}
WITH anon_duck_classed AS (
    SELECT record, {{ q_list }}, count(*) OVER (PARTITION BY {{ q_list }}) AS class_size
    FROM (
        SELECT DISTINCT {{ anon_duck.quote_identifier(id) }} AS record{% for c in columns %}, {{ anon_duck.quote_identifier(c) }} AS q_{{ loop.index0 }}{% endfor %}

        FROM {{ relation }}
    ) AS anon_duck_distinct
), anon_duck_records AS (
    SELECT DISTINCT {% for c in columns %}r.q_{{ loop.index0 }}, {% endfor %}r.class_size, r.record, c.{{ anon_duck.quote_identifier(code) }} AS item
    FROM anon_duck_classed AS r
    JOIN {{ codes_relation if codes_relation is not none else relation }} AS c
      ON c.{{ anon_duck.quote_identifier(id) }} = r.record
    WHERE r.class_size >= {{ k_value }} AND c.{{ anon_duck.quote_identifier(code) }} IS NOT NULL
)
SELECT 'class' AS kind, {% for c in columns %}q_{{ loop.index0 }} AS {{ anon_duck.quote_identifier(names[loop.index0]) }}, {% endfor %}class_size,
       NULL AS size, {% for i in range(1, (m | int) + 1) %}NULL AS item_{{ i }}, {% endfor %}NULL AS support
FROM (SELECT DISTINCT {{ q_list }}, class_size FROM anon_duck_classed WHERE class_size < {{ k_value }}) AS anon_duck_small
UNION ALL
SELECT 'itemset' AS kind, {% for c in columns %}q_{{ loop.index0 }}, {% endfor %}class_size, size, {% for i in range(1, (m | int) + 1) %}item_{{ i }}, {% endfor %}support
FROM (
{{ anon_duck.rare_itemsets('anon_duck_records', keys + ['class_size'], 'record', 'item', m, k) }}
) AS anon_duck_rare
{%- endmacro %}
