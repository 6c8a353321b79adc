{#- Rare itemsets: the core of k^m-anonymity (Terrovitis et al. 2008) and of Condition 2 of
    (k, k^m)-anonymity (seed 000, Definition 1), shared by every verifier of set-valued data.

    rare_itemsets(source, keys, record, item, m, k) renders a UNION of one SELECT per itemset
    size 1..m. ``source`` is the name of a CTE or relation with one row per DISTINCT
    (keys..., record, item): a group (keys; may be empty = one group), a record id and one of
    the record's items. For every set of ``size`` distinct items held together by some record
    of a group, the support is the number of the group's records holding all of them; sets
    with support < k are returned as
        keys..., size, item_1 .. item_m (ascending; NULL past size), support.
    The self-join chain requires item_1 < item_2 < ..., so each set is built once, sorted.
    ``keys``, ``record`` and ``item`` are internal lowercase names the caller gave its own
    columns (e.g. g_0, record, item), written unquoted like every internal name of the package,
    so they read the same in every warehouse; user columns are quoted where the caller aliases
    them. ``m`` shapes the query (one join per extra item).

    This macro belongs to the verifiers: no anonymizer renders it (the disassociation method
    has its own itemset SQL), so one bug cannot fool both a method and its check. -#}
{% macro rare_itemsets(source, keys, record, item, m, k) -%}
{{- adapter.dispatch('rare_itemsets', 'anon_duck')(source, keys, record, item, m, k) -}}
{%- endmacro %}

{% macro default__rare_itemsets(source, keys, record, item, m, k) -%}
{%- set m_value = anon_duck.integer_argument(m, 'm') | int -%}
{%- set k_value = anon_duck.integer_argument(k, 'k') -%}
{%- set rec = record -%}
{%- set it = item -%}
{% for size in range(1, m_value + 1) %}
SELECT {% for key in keys %}c1.{{ key }}, {% endfor %}{{ size }} AS size,
       {% for i in range(1, m_value + 1) %}{% if i <= size %}c{{ i }}.{{ it }}{% else %}NULL{% endif %} AS item_{{ i }}, {% endfor %}count(*) AS support
FROM {{ source }} AS c1
{% for i in range(2, size + 1) %}
JOIN {{ source }} AS c{{ i }}
  ON c{{ i }}.{{ rec }} = c1.{{ rec }}
{% for key in keys %}
 AND c{{ i }}.{{ key }} = c1.{{ key }}
{% endfor %}
 AND c{{ i - 1 }}.{{ it }} < c{{ i }}.{{ it }}
{% endfor %}
GROUP BY {% for key in keys %}c1.{{ key }}, {% endfor %}{% for i in range(1, size + 1) %}c{{ i }}.{{ it }}{{ ", " if not loop.last }}{% endfor %}

HAVING count(*) < {{ k_value }}
{% if not loop.last %}
UNION ALL
{% endif %}
{% endfor %}
{%- endmacro %}

{#- One list element per row: ``unnest`` in DuckDB, ``explode`` in Spark (select-list use). -#}
{% macro unnest_list(column) -%}
{{- adapter.dispatch('unnest_list', 'anon_duck')(column) -}}
{%- endmacro %}

{% macro default__unnest_list(column) -%}
unnest({{ column }})
{%- endmacro %}

{% macro spark__unnest_list(column) -%}
explode({{ column }})
{%- endmacro %}
